import Discovery
import Foundation
import XCTest

/// `AvahiDiscovery` against a real avahi-daemon on a simulated LAN host, with a second host
/// publishing and browsing through Avahi's command-line tools. Skipped unless
/// ORDERSYNC_AVAHI_TESTS=1 (set by Tests/lan/test_discovery_swift.py, which runs them).
final class AvahiDiscoveryLanTests: XCTestCase {
    private var host: SimulatedHost!
    private var recorder: EventRecorder!
    private var discovery: AvahiDiscovery!
    private var publishers: [PeerPublisher] = []
    /// A suffix that keeps names unique across tests (peer caches outlive a test).
    private let tag = String(UInt32.random(in: 1000...9999))

    override func setUpWithError() throws {
        try super.setUpWithError()
        host = try SimulatedHost.current()
        try host.ensureAvahiRunning()
        recorder = EventRecorder()
        discovery = AvahiDiscovery(onEvent: recorder.handler)
    }

    override func tearDownWithError() throws {
        discovery?.stop()
        for publisher in publishers {
            publisher.stop()
        }
        if host != nil {
            try host.ensureAvahiRunning()
        }
        try super.tearDownWithError()
    }

    private func awaitEvent(
        since: Int = 0, timeout: TimeInterval = 20, _ what: String,
        where predicate: (DiscoveryEvent) -> Bool
    ) throws -> DiscoveryEvent {
        guard let event = recorder.wait(since: since, timeout: timeout, where: predicate) else {
            throw LanTestError("no \(what) within \(timeout) s; events: \(recorder.all)")
        }
        return event
    }

    func testPublishedServiceIsSeenByAvahiBrowseOnThePeer() throws {
        let name = "Swift POS \(tag)"
        discovery.publish(
            ServiceAnnouncement(
                name: name, port: 8123,
                txt: [("proto", "ordersync/1"), ("store", "s1")]))
        try discovery.start()
        _ = try awaitEvent("daemonAvailable") { $0 == .daemonAvailable }
        _ = try awaitEvent("published") { $0.publishedName == name }

        let seen = try host.browseOnPeer(timeout: 20) { $0.contains { $0.name == name } }
        let service = try XCTUnwrap(seen.first { $0.name == name }, "peer never saw \(name): \(seen)")
        XCTAssertEqual(service.address, host.address)
        XCTAssertEqual(service.port, 8123)
        XCTAssertEqual(service.txt, ["proto": "ordersync/1", "store": "s1"])

        discovery.unpublish()
        let after = try host.browseOnPeer(timeout: 20) { !$0.contains { $0.name == name } }
        XCTAssertFalse(after.contains { $0.name == name }, "still announced after unpublish")
    }

    func testBrowseResolvesAndLosesAServicePublishedByThePeer() throws {
        let name = "Peer POS \(tag)"
        let publisher = try host.publishOnPeer(name: name, port: 8124, txt: ["proto=ordersync/1", "store=p1", "flag"])
        publishers.append(publisher)
        discovery.browse(type: "_pos._tcp")
        try discovery.start()

        let event = try awaitEvent("serviceFound \(name)") { $0.found?.name == name }
        let service = try XCTUnwrap(event.found)
        XCTAssertEqual(service.type, "_pos._tcp")
        XCTAssertEqual(service.domain, "local")
        XCTAssertEqual(service.address, host.peerAddress)
        XCTAssertEqual(service.hostName, "h2.local")
        XCTAssertEqual(service.port, 8124)
        XCTAssertEqual(service.txt, ["proto": "ordersync/1", "store": "p1", "flag": ""])
        XCTAssertGreaterThan(service.interfaceIndex, 0)

        let mark = recorder.mark
        publisher.stop()
        _ = try awaitEvent(since: mark, "serviceLost \(name)") {
            $0 == .serviceLost(name: name, type: "_pos._tcp", domain: "local")
        }
    }

    func testRebrowseResolvesAServiceAgainAndReportsItFoundAgain() throws {
        let name = "Rebrowsed POS \(tag)"
        publishers.append(try host.publishOnPeer(name: name, port: 8127, txt: ["proto=ordersync/1"]))
        discovery.browse(type: "_pos._tcp")
        try discovery.start()
        _ = try awaitEvent("serviceFound \(name)") { $0.found?.name == name }

        let mark = recorder.mark
        discovery.rebrowse(type: "_pos._tcp")
        let again = try awaitEvent(since: mark, "serviceFound \(name) after rebrowse") { $0.found?.name == name }
        XCTAssertEqual(again.found?.port, 8127)
        XCTAssertEqual(again.found?.address, host.peerAddress)
        XCTAssertFalse(
            recorder.all.dropFirst(mark).contains { $0 == .serviceLost(name: name, type: "_pos._tcp", domain: "local") },
            "a fresh browse reports nothing lost")
    }

    func testServiceThatMovesToAnotherPortIsReportedAgain() throws {
        let name = "Moving POS \(tag)"
        discovery.browse(type: "_pos._tcp")
        try discovery.start()
        let first = try host.publishOnPeer(name: name, port: 8125, txt: ["proto=ordersync/1"])
        publishers.append(first)
        _ = try awaitEvent("serviceFound on 8125") { $0.found?.name == name && $0.found?.port == 8125 }

        let mark = recorder.mark
        first.stop()
        publishers.append(try host.publishOnPeer(name: name, port: 8126, txt: ["proto=ordersync/1"]))
        let moved = try awaitEvent(since: mark, "serviceFound on 8126") { $0.found?.name == name }
        XCTAssertEqual(moved.found?.port, 8126)
        XCTAssertEqual(moved.found?.address, host.peerAddress)
    }

    func testNameTakenByThePeerMakesOurServiceRenamed() throws {
        let name = "Busy POS \(tag)"
        publishers.append(try host.publishOnPeer(name: name, port: 8127, txt: ["proto=other/1"]))
        discovery.publish(ServiceAnnouncement(name: name, port: 8128, txt: [("proto", "ordersync/1")]))
        try discovery.start()

        let collision = try awaitEvent("nameCollision") {
            if case .nameCollision = $0 { return true }
            return false
        }
        guard case .nameCollision(let old, let new) = collision else {
            return XCTFail("not a collision: \(collision)")
        }
        XCTAssertEqual(old, name)
        XCTAssertEqual(new, "\(name) #2")
        _ = try awaitEvent("published as \(new)") { $0.publishedName == new }
        XCTAssertNil(recorder.all.first { $0.publishedName == name }, "published under the taken name")

        let seen = try host.browseOnPeer(timeout: 20) { $0.contains { $0.name == new } }
        let ours = try XCTUnwrap(seen.first { $0.name == new }, "peer never saw \(new): \(seen)")
        XCTAssertEqual(ours.address, host.address)
        XCTAssertEqual(ours.port, 8128)
        XCTAssertEqual(seen.first { $0.name == name }?.address, host.peerAddress)
    }

    func testDaemonRestartIsSurvivedAndTheServicePublishedAgain() throws {
        let name = "Restart POS \(tag)"
        discovery.publish(ServiceAnnouncement(name: name, port: 8129, txt: [("proto", "ordersync/1")]))
        discovery.browse(type: "_pos._tcp")
        let peerName = "Steady POS \(tag)"
        publishers.append(try host.publishOnPeer(name: peerName, port: 8130, txt: ["proto=ordersync/1"]))
        try discovery.start()
        _ = try awaitEvent("published") { $0.publishedName == name }
        _ = try awaitEvent("peer service found") { $0.found?.name == peerName }

        let mark = recorder.mark
        try host.stopAvahi()
        _ = try awaitEvent(since: mark, "daemonUnavailable") { $0.isDaemonUnavailable }
        _ = try awaitEvent(since: mark, "peer service lost with the daemon") {
            $0 == .serviceLost(name: peerName, type: "_pos._tcp", domain: "local")
        }

        let restart = recorder.mark
        try host.ensureAvahiRunning()
        _ = try awaitEvent(since: restart, "daemonAvailable") { $0 == .daemonAvailable }
        _ = try awaitEvent(since: restart, "published again") { $0.publishedName == name }
        _ = try awaitEvent(since: restart, "peer service found again") { $0.found?.name == peerName }
        let seen = try host.browseOnPeer(timeout: 20) { $0.contains { $0.name == name } }
        XCTAssertEqual(seen.first { $0.name == name }?.address, host.address)
    }

    func testDaemonStartedAfterUsIsWaitedFor() throws {
        try host.stopAvahi()
        let name = "Late POS \(tag)"
        discovery.publish(ServiceAnnouncement(name: name, port: 8131, txt: [("proto", "ordersync/1")]))
        try discovery.start()
        let event = try awaitEvent("daemonUnavailable") { $0.isDaemonUnavailable }
        guard case .daemonUnavailable(let reason) = event else {
            return XCTFail("unexpected \(event)")
        }
        XCTAssertTrue(reason.contains("not running"), reason)

        try host.ensureAvahiRunning()
        _ = try awaitEvent("daemonAvailable") { $0 == .daemonAvailable }
        _ = try awaitEvent("published") { $0.publishedName == name }
        let seen = try host.browseOnPeer(timeout: 20) { $0.contains { $0.name == name } }
        XCTAssertEqual(seen.first { $0.name == name }?.port, 8131)
    }

    func testRepublishingReplacesTheAnnouncement() throws {
        let name = "Changing POS \(tag)"
        discovery.publish(ServiceAnnouncement(name: name, port: 8132, txt: [("proto", "ordersync/1")]))
        try discovery.start()
        _ = try awaitEvent("published") { $0.publishedName == name }
        let mark = recorder.mark
        discovery.publish(ServiceAnnouncement(name: name, port: 8133, txt: [("proto", "ordersync/1"), ("v", "2")]))
        _ = try awaitEvent(since: mark, "published again") { $0.publishedName == name }
        let seen = try host.browseOnPeer(timeout: 20) {
            $0.contains { $0.name == name && $0.port == 8133 && $0.txt["v"] == "2" }
        }
        XCTAssertTrue(seen.contains { $0.name == name && $0.port == 8133 }, "\(seen)")
    }

    func testRequestsReturnAtOnceWhileTheDaemonHangs() throws {
        let name = "Hung POS \(tag)"
        discovery.publish(ServiceAnnouncement(name: name, port: 8134, txt: [("proto", "ordersync/1")]))
        discovery.browse(type: "_pos._tcp")
        try discovery.start()
        _ = try awaitEvent("published") { $0.publishedName == name }
        let pidText = try host.run(["cat", "/run/avahi-daemon/pid"]).output
        let daemon = try XCTUnwrap(pid_t(pidText.trimmingCharacters(in: .whitespacesAndNewlines)), pidText)
        // Stopped, the daemon keeps its D-Bus name and answers nothing: each call to it waits
        // for D-Bus to give up (25 s), holding Avahi's lock.
        XCTAssertEqual(kill(daemon, SIGSTOP), 0)
        defer { kill(daemon, SIGCONT) }
        let mark = recorder.mark
        let clock = ContinuousClock()
        let took = clock.measure {
            discovery.rebrowse(type: "_pos._tcp") // frees the browser: a call to the daemon
            discovery.publish(ServiceAnnouncement(name: name, port: 8135, txt: [("proto", "ordersync/1")]))
            discovery.unpublish()
            discovery.publish(ServiceAnnouncement(name: name, port: 8136, txt: [("proto", "ordersync/1")]))
        }
        XCTAssertLessThan(took, .milliseconds(500), "requests waited for the hung daemon")
        XCTAssertEqual(kill(daemon, SIGCONT), 0)
        _ = try awaitEvent(since: mark, timeout: 30, "published after the daemon resumed") { $0.publishedName == name }
        let seen = try host.browseOnPeer(timeout: 20) { $0.contains { $0.name == name && $0.port == 8136 } }
        XCTAssertTrue(seen.contains { $0.name == name && $0.port == 8136 }, "\(seen)")
    }
}
