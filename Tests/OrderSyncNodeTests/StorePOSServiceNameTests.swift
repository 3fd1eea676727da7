import OrderSyncNode
import XCTest

/// The DNS-SD instance name a master publishes, and whether StorePOS apps find it: they browse
/// `_pos._tcp` for the instance named `POSMaster`, ignoring case and diacritics.
final class StorePOSServiceNameTests: XCTestCase {
    private func master(name: String?, insecureStorePOS: Bool) -> NodeConfiguration {
        var c = NodeConfiguration(
            role: .master, dataDirectory: "/nonexistent", store: nil, name: name, serviceType: "_pos._tcp", port: 0,
            listenAddress: "127.0.0.1", masterURL: nil)
        c.insecureStorePOS = insecureStorePOS
        return c
    }

    func testAMasterAdmittingStorePOSTerminalsIsPOSMasterUnlessNamed() {
        XCTAssertEqual(master(name: nil, insecureStorePOS: true).serviceInstanceName, "POSMaster")
        XCTAssertEqual(master(name: "front", insecureStorePOS: true).serviceInstanceName, "front")
        XCTAssertNotEqual(master(name: nil, insecureStorePOS: false).serviceInstanceName, "POSMaster")
        XCTAssertEqual(master(name: "POSMaster", insecureStorePOS: false).serviceInstanceName, "POSMaster")
    }

    func testStorePOSAppsFindOnlyPOSMasterIgnoringCaseAndDiacritics() {
        for found in ["POSMaster", "posmaster", "PÓSMaster"] { XCTAssertTrue(NodeConfiguration.storePOSAppFinds(found), found) }
        for missed in ["POSMaster #2", "front", "POS Master", ""] { XCTAssertFalse(NodeConfiguration.storePOSAppFinds(missed), missed) }
    }
}
