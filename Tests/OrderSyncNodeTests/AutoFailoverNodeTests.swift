import Foundation
import JSON
import NodePolicy
import OrderStore
import XCTest

@testable import OrderSyncNode

/// `--auto-failover` on real nodes in one process (Docs/PROTOCOL.md, "Automatic failover"): a
/// master of three voters refuses writes `no_quorum` until a voter is heard; with the master
/// alive nothing changes; once it stops, a slave becomes master by itself in term 2 within 5 s
/// and the other follows it.
final class AutoFailoverNodeTests: XCTestCase {
    private var directories: [String] = []

    override func tearDown() {
        for d in directories { try? FileManager.default.removeItem(atPath: d) }
    }

    private func temporaryDirectory() -> String {
        let d = NSTemporaryDirectory() + "ordersync-auto-" + UUID().uuidString
        directories.append(d)
        return d
    }

    /// Polls `condition` until it gives a value.
    private func waitFor<T>(_ what: String, timeout: TimeInterval, _ condition: () -> T?) throws -> T {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let value = condition() { return value }
            if Date() > deadline {
                XCTFail("timed out waiting for \(what)")
                throw CancellationError()
            }
            usleep(20_000)
        }
    }

    private func waitLive(_ node: RunningNode, port: UInt16? = nil, _ what: String) throws {
        _ = try waitForStatus(node, what) { status -> Bool? in
            guard case .slave(let s) = status, s.master.state == .live else { return nil }
            if let port, !(s.master.url ?? "").contains(":\(port)") { return nil }
            return true
        }
    }

    private func order(_ name: String) -> JSONValue {
        .object(JSONObject([("uuid", .string(UUID().uuidString.lowercased())), ("customerName", .string(name))]))
    }

    private func post(_ node: RunningNode, _ name: String) throws -> LocalAPIResponse {
        try LocalAPIClient(dataDirectory: node.dataDirectory).send(method: "POST", path: "/v1/orders", body: order(name))
    }

    private func metadata(_ directory: String, _ key: String) throws -> String? {
        let db = try OrderDatabase(path: directory + "/" + NodeDefaults.databaseFile)
        defer { db.close() }
        return try db.metadata(key)
    }

    func testASlaveTakesOverByItselfWhenTheMasterStopsAndNotBefore() throws {
        let (masterDir, aDir, bDir) = (temporaryDirectory(), temporaryDirectory(), temporaryDirectory())
        // Three voters: the master and two paired slaves, whose standby copies name them all.
        let setup = try RunningNode(role: .master, dataDirectory: masterDir, name: "front")
        XCTAssertEqual(try post(setup, "Ann").status, 201)
        let a0 = try setup.pairedSlave(dataDirectory: aDir, name: "bar-2")
        let b0 = try setup.pairedSlave(dataDirectory: bDir, name: "patio")
        try waitLive(a0, "bar-2 to sync")
        try waitLive(b0, "patio to sync")
        for node in [setup, a0, b0] { node.stop() }

        let bus = DiscoveryBus()
        let auto: (inout NodeConfiguration) -> Void = { $0.enableAutoFailover(true) }
        let master = try RunningNode(role: .master, dataDirectory: masterDir, name: "front", discovery: bus.discovery(), configure: auto)
        // No voter heard yet: the master does not acknowledge, and says why.
        let refused = try post(master, "Bo")
        XCTAssertEqual(refused.status, 503, "\(refused.body)")
        XCTAssertEqual(refused.body.objectValue?["error"]?.objectValue?["code"]?.stringValue, "no_quorum")
        guard case .master(let lapsed) = try master.status() else { return XCTFail("not a master") }
        XCTAssertEqual(lapsed.autoFailover, AutoFailoverStatus(state: .lapsed, leaseMillis: 2_500, heard: 1, majority: 2))

        let a = try RunningNode(role: .slave, dataDirectory: aDir, name: "bar-2", discovery: bus.discovery(), configure: auto)
        let b = try RunningNode(role: .slave, dataDirectory: bDir, name: "patio", discovery: bus.discovery(), configure: auto)
        try waitLive(a, "bar-2 to follow front")
        try waitLive(b, "patio to follow front")
        // A voter heard: with the master, a majority; the lease is held and writes are taken.
        _ = try waitForStatus(master, "the lease to be held") { _ -> Bool? in (try? post(master, "Cy").status) == 201 ? true : nil }
        guard case .master(let held) = try master.status() else { return XCTFail("not a master") }
        XCTAssertEqual(held.autoFailover?.state, .held)
        XCTAssertEqual(held.autoFailover?.majority, 2)
        for node in [a, b] {
            guard case .slave(let s) = try node.status(), let watch = s.autoFailover else { return XCTFail("no watch in status") }
            XCTAssertEqual(watch.state, .watching)
            XCTAssertTrue((3_000..<4_600).contains(watch.standAfterMillis ?? 0), "the first or second of two: \(watch)")
            XCTAssertLessThan(watch.silentMillis ?? .max, 2_500, "a live master is heard")
        }

        // With the master alive, nothing happens over 10 s (3 lease lengths and more).
        let watchUntil = Date().addingTimeInterval(10)
        while Date() < watchUntil {
            for node in [a, b] {
                guard case .slave(let s) = try node.status() else { return XCTFail("a slave changed roles with its master alive") }
                XCTAssertNotEqual(s.master.state, .idle)
            }
            guard case .master = try master.status() else { return XCTFail("the master changed roles") }
            usleep(200_000)
        }
        XCTAssertEqual(try post(master, "Di").status, 201, "the lease is still held")
        XCTAssertNil(bus.published.first { ["2", "3"].contains($0.txt["term"] ?? "") }, "no candidate stood")

        // The master stops: a slave becomes master by itself, within 5 s, in the term its member
        // number owns (Docs/PROTOCOL.md 7.16): bar-2 is member 2, patio member 3.
        let stoppedAt = Date()
        master.stop()
        // Master proper: the term committed, TXT `role=master`.
        let published = try waitFor("a slave to become master proper in term 2 or 3", timeout: 8) {
            bus.published.first { ["2", "3"].contains($0.txt["term"] ?? "") && $0.txt["role"] == "master" }
        }
        let tookSeconds = Date().timeIntervalSince(stoppedAt)
        XCTAssertLessThan(tookSeconds, 5, "the promotion took \(tookSeconds) s")
        print("FIGURE automatic promotion: master proper \(Int(tookSeconds * 1000)) ms after the master stopped")
        var promotedNodes: [RunningNode] = []
        for node in [a, b] {
            if case .master(let m) = try node.status(), m.port == published.port { promotedNodes.append(node) }
        }
        XCTAssertEqual(promotedNodes.count, 1)
        let promoted = try XCTUnwrap(promotedNodes.first)
        let other = promoted === a ? b : a
        let term = promoted === a ? "2" : "3"
        XCTAssertEqual(published.txt["term"], term, "its own ballot")
        XCTAssertEqual(published.txt["auto"], nil, "auto=1 marks a candidate only")
        try waitLive(other, port: published.port, "the other slave to follow the promoted one")
        // The new master hears the other voter: it takes writes.
        _ = try waitForStatus(promoted, "the new master's lease") { _ -> Bool? in (try? post(promoted, "Ed").status) == 201 ? true : nil }
        guard case .master(let promotedStatus) = try promoted.status() else { return XCTFail("not a master") }
        XCTAssertEqual(promotedStatus.autoFailover?.state, .held, "the new master runs its own lease")
        XCTAssertEqual(promotedStatus.autoFailover?.majority, 2, "of 3 voters: the old master counts")
        let text = try LocalAPIClient(dataDirectory: promoted.dataDirectory).metrics()
        XCTAssertTrue(text.contains("ordersync_automatic_promotions_total 1"), text)
        for node in [other, promoted] { node.stop() }

        XCTAssertEqual(try metadata(promoted.dataDirectory, "sync.term"), term)
        XCTAssertEqual(try metadata(other.dataDirectory, "sync.term"), term)
        XCTAssertEqual(try metadata(promoted.dataDirectory, "node.role"), "master")
    }

    func testTwoVotersTurnAutomaticFailoverOff() throws {
        let masterDir = temporaryDirectory()
        let setup = try RunningNode(role: .master, dataDirectory: masterDir, name: "front")
        let a0 = try setup.pairedSlave(dataDirectory: temporaryDirectory(), name: "bar-2")
        try waitLive(a0, "bar-2 to sync")
        a0.stop()
        setup.stop()
        // Two voters: the two-node problem. The flag is logged and off: no lease, writes taken.
        let master = try RunningNode(role: .master, dataDirectory: masterDir, name: "front") { $0.enableAutoFailover(true) }
        defer { master.stop() }
        XCTAssertEqual(try post(master, "Bo").status, 201)
        guard case .master(let status) = try master.status() else { return XCTFail("not a master") }
        XCTAssertEqual(status.autoFailover?.state, .off)
    }
}
