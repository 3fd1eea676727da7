import XCTest

@testable import NodePolicy

/// `ordersync status` as text, at a given time: the pairing window counts down from it.
final class StatusTextTests: XCTestCase {
    private func master(pairing: PairingWindowStatus) -> NodeStatus {
        .master(
            MasterStatus(
                version: "0.1.0", store: "shop1", name: "front", nodeId: "N", epoch: "E", seq: 42, orders: 3, port: 7420,
                dataDir: "/d", serviceType: "_pos._tcp", serviceName: "front", avahi: .up, uptimeSeconds: 10, peers: [],
                terminals: [], tombstones: 0, pairing: pairing, pairedTerminals: 0))
    }

    func testAnOpenWindowCountsDownFromTheTimeGiven() {
        let now: Int64 = 1_700_000_000_000
        let open = master(pairing: PairingWindowStatus(state: .open, name: "till", expiresAtMillis: now + 30_500, openCodes: 1))
        XCTAssertTrue(
            StatusText.render(open, nowMillis: now).contains("pairing:   1 code(s) open, the next closes in 30 s (for till)\n"),
            StatusText.render(open, nowMillis: now))
        XCTAssertTrue(StatusText.render(open, nowMillis: now + 29_000).contains("the next closes in 1 s"))
        XCTAssertTrue(StatusText.render(open, nowMillis: now + 60_000).contains("the next closes in 0 s"), "never negative")
        let closed = master(pairing: PairingWindowStatus(state: .closed, openCodes: 0))
        XCTAssertTrue(StatusText.render(closed, nowMillis: now).contains("pairing:   closed\n"))
    }
}
