import XCTest

@testable import OrderSyncNode

/// The master URL and the settings' validators.
final class MasterURLTests: XCTestCase {
    func testParsing() {
        XCTAssertEqual(MasterURL(parsing: "ws://10.0.0.1:7420/"), MasterURL(host: "10.0.0.1", port: 7420, path: "/"))
        XCTAssertEqual(MasterURL(parsing: "ws://pos.local"), MasterURL(host: "pos.local", port: NodeDefaults.port, path: "/"))
        XCTAssertEqual(MasterURL(parsing: "WS://[::1]:80/x"), MasterURL(host: "::1", port: 80, path: "/x"))
        XCTAssertEqual(MasterURL(host: "::1", port: 80).description, "ws://[::1]:80/")
        for bad in ["http://a:1/", "ws://", "ws://a:0/", "ws://a:99999/", "ws://a:x/", "ws://[::1/", "ws://a b/"] {
            XCTAssertNil(MasterURL(parsing: bad), bad)
        }
    }

    func testValidators() {
        XCTAssertTrue(NodeConfiguration.isValidServiceType("_pos._tcp"))
        XCTAssertFalse(NodeConfiguration.isValidServiceType("pos._tcp"))
        XCTAssertFalse(NodeConfiguration.isValidServiceType("_pos._udp"))
        XCTAssertFalse(NodeConfiguration.isValidServiceType("_averyveryverylongname._tcp"))
        XCTAssertTrue(NodeConfiguration.isValidStoreId("shop-1.main_2"))
        XCTAssertFalse(NodeConfiguration.isValidStoreId(""))
        XCTAssertFalse(NodeConfiguration.isValidStoreId("shop 1"))
        XCTAssertFalse(NodeConfiguration.isValidStoreId("ünï"))
    }
}
