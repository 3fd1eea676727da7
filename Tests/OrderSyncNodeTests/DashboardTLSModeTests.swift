import XCTest

@testable import OrderSyncNode

/// When the dashboard's listener speaks TLS.
final class DashboardTLSModeTests: XCTestCase {
    func testTLSByDefaultBeyondLoopbackOnly() {
        func address(_ host: String) -> MetricsAddress { MetricsAddress(host: host, port: 8080) }
        XCTAssertTrue(DashboardTLSMode.auto.usesTLS(listeningOn: address("0.0.0.0")))
        XCTAssertTrue(DashboardTLSMode.auto.usesTLS(listeningOn: address("::")))
        XCTAssertTrue(DashboardTLSMode.auto.usesTLS(listeningOn: address("192.168.1.20")))
        XCTAssertFalse(DashboardTLSMode.auto.usesTLS(listeningOn: address("127.0.0.1")))
        XCTAssertFalse(DashboardTLSMode.auto.usesTLS(listeningOn: address("127.0.0.2")))
        XCTAssertFalse(DashboardTLSMode.auto.usesTLS(listeningOn: address("::1")))
        XCTAssertTrue(DashboardTLSMode.on.usesTLS(listeningOn: address("127.0.0.1")))
        XCTAssertFalse(DashboardTLSMode.off.usesTLS(listeningOn: address("0.0.0.0")))
    }
}
