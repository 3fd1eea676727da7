@testable import Discovery
import XCTest

final class DiscoveredServicesTests: XCTestCase {
    private func key(_ name: String, interface: Int32 = 2) -> ServiceKey {
        ServiceKey(interfaceIndex: interface, protocolFamily: 0, name: name, type: "_pos._tcp", domain: "local")
    }

    private func service(_ name: String, port: UInt16 = 8080, address: String = "10.0.0.1",
                         interface: Int32 = 2) -> ResolvedService {
        ResolvedService(name: name, type: "_pos._tcp", domain: "local", hostName: "h.local", address: address,
                        port: port, txt: ["proto": "ordersync/1"], interfaceIndex: interface)
    }

    func testReportsANewResolutionOnceAndAChangedOneAgain() {
        var table = DiscoveredServices()
        table.appeared(key("A"))
        XCTAssertTrue(table.resolved(key("A"), as: service("A")))
        XCTAssertFalse(table.resolved(key("A"), as: service("A")))
        XCTAssertTrue(table.resolved(key("A"), as: service("A", port: 9090)))
        XCTAssertTrue(table.resolved(key("A"), as: service("A", port: 9090, address: "10.0.0.2")))
    }

    func testIgnoresResolutionsOfServicesNoLongerPresent() {
        var table = DiscoveredServices()
        XCTAssertFalse(table.resolved(key("A"), as: service("A")))
        table.appeared(key("A"))
        _ = table.disappeared(key("A"))
        XCTAssertFalse(table.resolved(key("A"), as: service("A")))
    }

    func testLostOnlyWhenGoneFromEveryInterfaceAndOnlyIfReported() {
        var table = DiscoveredServices()
        table.appeared(key("A", interface: 2))
        table.appeared(key("A", interface: 3))
        XCTAssertTrue(table.resolved(key("A", interface: 2), as: service("A", interface: 2)))
        XCTAssertNil(table.disappeared(key("A", interface: 2)))
        XCTAssertEqual(table.disappeared(key("A", interface: 3)),
                       ServiceInstance(name: "A", type: "_pos._tcp", domain: "local"))
        XCTAssertEqual(table.count, 0)

        table.appeared(key("B"))
        XCTAssertNil(table.disappeared(key("B")), "never resolved, so never reported, so not lost")
        XCTAssertNil(table.disappeared(key("C")), "a REMOVE for something never seen")
    }

    func testRemoveThenNewReportsTheServiceAgain() {
        var table = DiscoveredServices()
        table.appeared(key("A"))
        XCTAssertTrue(table.resolved(key("A"), as: service("A")))
        XCTAssertNotNil(table.disappeared(key("A")))
        table.appeared(key("A"))
        XCTAssertTrue(table.resolved(key("A"), as: service("A")))
    }

    func testRemoveAllReturnsEachReportedInstanceOnce() {
        var table = DiscoveredServices()
        for (name, interface) in [("A", Int32(2)), ("A", 3), ("B", 2), ("C", 2)] {
            table.appeared(key(name, interface: interface))
        }
        XCTAssertTrue(table.resolved(key("A", interface: 2), as: service("A", interface: 2)))
        XCTAssertTrue(table.resolved(key("A", interface: 3), as: service("A", interface: 3)))
        XCTAssertTrue(table.resolved(key("B"), as: service("B")))
        XCTAssertEqual(table.removeAll().map(\.name), ["A", "B"])
        XCTAssertEqual(table.count, 0)
        XCTAssertEqual(table.removeAll(), [])
    }

    func testBackoffDoublesUpToItsMaximumAndResets() {
        var backoff = ReconnectBackoff()
        XCTAssertEqual((0..<8).map { _ in backoff.next() },
                       [1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000])
        backoff.reset()
        XCTAssertEqual(backoff.next(), 1_000)
        var large = ReconnectBackoff(initial: 3_000_000_000, maximum: UInt32.max)
        XCTAssertEqual(large.next(), 3_000_000_000)
        XCTAssertEqual(large.next(), UInt32.max)
    }
}
