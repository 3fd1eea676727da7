import XCTest

@testable import Discovery

final class ServiceAnnouncementTests: XCTestCase {
    func testDefaultsToStorePOSServiceType() {
        XCTAssertEqual(ServiceAnnouncement(name: "Front", port: 8080).type, "_pos._tcp")
    }

    func testAcceptsAPlainAnnouncement() {
        let announcement = ServiceAnnouncement(
            name: "Front Counter. Café #1", port: 8080,
            txt: [("proto", "ordersync/1"), ("store", "abc")])
        XCTAssertNoThrow(try announcement.validate())
    }

    func testRejectsBadInstanceNames() {
        for name in ["", String(repeating: "x", count: 64), "tab\there", "del\u{7f}"] {
            XCTAssertThrowsError(try ServiceAnnouncement(name: name, port: 1).validate(), name.debugDescription) {
                XCTAssertEqual(($0 as? DiscoveryError)?.context, "name")
            }
        }
        XCTAssertNoThrow(try ServiceAnnouncement(name: String(repeating: "x", count: 63), port: 1).validate())
        // 21 three-byte characters: 63 bytes of UTF-8.
        XCTAssertNoThrow(try ServiceAnnouncement(name: String(repeating: "\u{20ac}", count: 21), port: 1).validate())
        XCTAssertThrowsError(try ServiceAnnouncement(name: String(repeating: "\u{20ac}", count: 22), port: 1).validate())
    }

    func testRejectsBadServiceTypes() {
        for type in [
            "pos._tcp", "_pos._sctp", "_pos", "_pos._tcp.local", "_._tcp", "_-pos._tcp",
            "_pos-._tcp", "_p--s._tcp", "_123._tcp", "_averyverylongname._tcp", "_p s._tcp",
        ] {
            XCTAssertThrowsError(try ServiceAnnouncement(name: "n", type: type, port: 1).validate(), type) {
                XCTAssertEqual(($0 as? DiscoveryError)?.context, "type")
            }
        }
        for type in ["_pos._tcp", "_http._tcp", "_x-1._udp", "_abcdefghijklmno._tcp"] {
            XCTAssertNoThrow(try ServiceAnnouncement(name: "n", type: type, port: 1).validate(), type)
        }
    }

    func testRejectsPortZeroAndBadTXT() {
        XCTAssertThrowsError(try ServiceAnnouncement(name: "n", port: 0).validate())
        XCTAssertThrowsError(try ServiceAnnouncement(name: "n", port: 1, txt: [("a=b", "c")]).validate())
    }

    func testErrorDescriptionCarriesContextAndAvahiCode() {
        let error = DiscoveryError(code: .avahi, avahiError: -3, message: "Bad state", context: "avahi_x")
        XCTAssertEqual(error.description, "avahi_x: Bad state (avahi error -3)")
    }

    func testResolvedServiceLooksUpTXTKeysIgnoringCase() {
        let service = ResolvedService(
            name: "n", type: "_pos._tcp", domain: "local", hostName: "h1.local",
            address: "10.0.0.1", port: 1, txt: ["Proto": "ordersync/1"],
            interfaceIndex: 2)
        XCTAssertEqual(service.txtValue(forKey: "proto"), "ordersync/1")
        XCTAssertEqual(service.txtValue(forKey: "Proto"), "ordersync/1")
        XCTAssertNil(service.txtValue(forKey: "store"))
    }
}
