import XCTest

@testable import Discovery

final class DiscoveredServicesTests: XCTestCase {
    private func key(_ name: String, interface: Int32 = 2) -> ServiceKey {
        ServiceKey(interfaceIndex: interface, protocolFamily: 0, name: name, type: "_pos._tcp", domain: "local")
    }

    private func service(
        _ name: String, port: UInt16 = 8080, address: String = "10.0.0.1",
        interface: Int32 = 2
    ) -> ResolvedService {
        ResolvedService(
            name: name, type: "_pos._tcp", domain: "local", hostName: "h.local", address: address,
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
        XCTAssertEqual(
            table.disappeared(key("A", interface: 3)),
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
        var backoff = ReconnectBackoff(initial: .seconds(1), maximum: .seconds(30))
        XCTAssertEqual(
            (0..<8).map { _ in backoff.next() },
            [1, 2, 4, 8, 16, 30, 30, 30].map { Duration.seconds($0) })
        backoff.reset()
        XCTAssertEqual(backoff.next(), .seconds(1))
        XCTAssertEqual(backoff.nextLongest(), .seconds(30))
        XCTAssertEqual(backoff.next(), .seconds(30), "after the longest, delays stay long until a reset")
    }

    func testJitterDrawsEachDelayFromItsUpperHalfWithTheInjectedSource() {
        let lowest = ReconnectBackoff.Jitter.downToHalf(random: { $0.lowerBound })
        var low = ReconnectBackoff(initial: .milliseconds(250), maximum: .seconds(5), jitter: lowest)
        XCTAssertEqual(
            (0..<6).map { _ in low.next() },
            [125, 250, 500, 1000, 2000, 2500].map { Duration.milliseconds($0) })
        var high = ReconnectBackoff(
            initial: .milliseconds(250), maximum: .seconds(5),
            jitter: .downToHalf(random: { $0.upperBound }))
        XCTAssertEqual(
            (0..<6).map { _ in high.next() },
            [250, 500, 1000, 2000, 4000, 5000].map { Duration.milliseconds($0) })
        XCTAssertEqual(high.nextLongest(), .seconds(5))
        var wild = ReconnectBackoff(initial: .seconds(1), maximum: .seconds(1), jitter: .downToHalf(random: { _ in -7 }))
        XCTAssertEqual(wild.next(), .milliseconds(500), "a source outside the range is clamped into it")
    }

    func testForgettingATypeReportsItsServicesFoundAgainWithoutLosingThem() {
        var table = DiscoveredServices()
        let other = ServiceKey(interfaceIndex: 2, protocolFamily: 0, name: "B", type: "_http._tcp", domain: "local")
        table.appeared(key("A"))
        table.appeared(other)
        XCTAssertTrue(table.resolved(key("A"), as: service("A")))
        XCTAssertTrue(table.resolved(other, as: service("B")))
        table.forget(type: "_pos._tcp")
        XCTAssertEqual(table.count, 1)
        XCTAssertNil(table.resolution(for: key("A")))
        XCTAssertNotNil(table.resolution(for: other))
        XCTAssertFalse(table.resolved(key("A"), as: service("A")), "not browsed again yet")
        table.appeared(key("A"))
        XCTAssertTrue(table.resolved(key("A"), as: service("A")), "the same resolution is reported again")
        XCTAssertNil(table.disappeared(ServiceKey(interfaceIndex: 9, protocolFamily: 0, name: "A", type: "_pos._tcp", domain: "local")))
    }
}
