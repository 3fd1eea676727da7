import Discovery
import Foundation
import JSON
import NodePolicy
import Noise
import OrderStore
import SecureLink
import SyncCore
import XCTest

@testable import OrderSyncNode

/// `POST /v1/promote` on real nodes in one process: a paired slave whose master is gone becomes
/// the store's master on the same loop, store writer, data directory lock and local API socket;
/// a slave without a standby copy, or a master, refuses.
final class PromotionNodeTests: XCTestCase {
    var directories: [String] = []

    override func tearDown() {
        for d in directories { try? FileManager.default.removeItem(atPath: d) }
    }

    func temporaryDirectory() -> String {
        let d = NSTemporaryDirectory() + "ordersync-promote-" + UUID().uuidString
        directories.append(d)
        return d
    }

    func promote(_ node: RunningNode, force: Bool = false) throws -> LocalAPIResponse {
        try LocalAPIClient(dataDirectory: node.dataDirectory).send(
            method: "POST", path: "/v1/promote", body: PromoteRequest(force: force).jsonValue)
    }

    /// A master with one order and a paired slave that holds it, the master then stopped.
    func slaveOfAStoppedMaster() throws -> (slaveDirectory: String, masterURL: MasterURL) {
        let master = try RunningNode(role: .master, dataDirectory: temporaryDirectory(), name: "front")
        let url = MasterURL(host: "127.0.0.1", port: master.port)
        let order = JSONValue.object(JSONObject([("uuid", .string(UUID().uuidString.lowercased())), ("customerName", .string("Ann"))]))
        let created = try LocalAPIClient(dataDirectory: master.dataDirectory).send(method: "POST", path: "/v1/orders", body: order)
        XCTAssertEqual(created.status, 201)
        let slaveDirectory = temporaryDirectory()
        let slave = try master.pairedSlave(dataDirectory: slaveDirectory, name: "bar-2")
        _ = try waitForStatus(slave, "the slave to hold the order") { status -> Bool? in
            guard case .slave(let s) = status, s.master.state == .live, s.orders == 1 else { return nil }
            return true
        }
        master.stop()
        slave.stop()
        return (slaveDirectory, url)
    }

    func metadata(_ directory: String, _ keys: [String]) throws -> [String: String] {
        let db = try OrderDatabase(path: directory + "/" + NodeDefaults.databaseFile)
        defer { db.close() }
        var out: [String: String] = [:]
        for k in keys { out[k] = try db.metadata(k) }
        return out
    }

    func testASlaveWithoutAStandbyCopyRefusesAndStaysASlave() throws {
        // Paired with no master yet: it never received the store's members.
        let probe = try RunningNode(role: .master, dataDirectory: temporaryDirectory(), name: "gone")
        let url = MasterURL(host: "127.0.0.1", port: probe.port)
        probe.stop()
        let slave = try RunningNode(
            role: .slave, dataDirectory: temporaryDirectory(), name: "bar-2", masterURL: url,
            configure: { $0.pairingCode = PairingCode.generate() })
        defer { slave.stop() }
        let answer = try promote(slave)
        XCTAssertEqual(answer.status, 409, "\(answer.body)")
        XCTAssertEqual(answer.body.objectValue?["error"]?.objectValue?["code"]?.stringValue, "no_standby_copy")
        guard case .slave = try slave.status() else { return XCTFail("the slave changed roles") }
    }

    func testAMasterAnswersNotASlave() throws {
        let master = try RunningNode(role: .master, dataDirectory: temporaryDirectory(), name: "front")
        defer { master.stop() }
        let answer = try promote(master, force: true)
        XCTAssertEqual(answer.status, 409, "\(answer.body)")
        XCTAssertEqual(answer.body.objectValue?["error"]?.objectValue?["code"]?.stringValue, "not_a_slave")
        let malformed = try LocalAPIClient(dataDirectory: master.dataDirectory).send(
            method: "POST", path: "/v1/promote", body: .object(JSONObject([("force", .string("yes"))])))
        XCTAssertEqual(malformed.status, 400, "\(malformed.body)")
        let wrongMethod = try LocalAPIClient(dataDirectory: master.dataDirectory).send(method: "GET", path: "/v1/promote")
        XCTAssertEqual(wrongMethod.status, 405, "\(wrongMethod.body)")
    }

    /// Two orders; bar-2 (stopped before the second) holds one, patio both; all stopped.
    func patioAheadOfBar2() throws -> (bar2: String, patio: String) {
        let (masterDir, aDir, bDir) = (temporaryDirectory(), temporaryDirectory(), temporaryDirectory())
        let master = try RunningNode(role: .master, dataDirectory: masterDir, name: "front")
        let api = LocalAPIClient(dataDirectory: masterDir)
        let first = JSONValue.object(JSONObject([("uuid", .string(UUID().uuidString.lowercased())), ("customerName", .string("Ann"))]))
        XCTAssertEqual(try api.send(method: "POST", path: "/v1/orders", body: first).status, 201)
        let a = try master.pairedSlave(dataDirectory: aDir, name: "bar-2")
        let b = try master.pairedSlave(dataDirectory: bDir, name: "patio")
        try waitLive(a, "bar-2 to sync")
        try waitLive(b, "patio to sync")
        // Only patio holds the second order when the master dies.
        a.stop()
        let second = JSONValue.object(JSONObject([("uuid", .string(UUID().uuidString.lowercased())), ("customerName", .string("Bo"))]))
        XCTAssertEqual(try api.send(method: "POST", path: "/v1/orders", body: second).status, 201)
        _ = try waitForStatus(b, "the second order on patio") { status -> Bool? in
            guard case .slave(let s) = status, s.seq == 2 else { return nil }
            return true
        }
        b.stop()
        master.stop()
        return (aDir, bDir)
    }

    func testACandidateBehindAVoterFetchesTheTailItLacks() throws {
        let (aDir, bDir) = try patioAheadOfBar2()
        // bar-2's fetch says where its journal ends and its term starts; patio answers with the
        // entries after the last one both hold in one term.
        let bus = DiscoveryBus()
        let promoted = try RunningNode(role: .slave, dataDirectory: aDir, name: "bar-2", discovery: bus.discovery())
        let voter = try RunningNode(role: .slave, dataDirectory: bDir, name: "patio", discovery: bus.discovery())
        defer { for node in [voter, promoted] { node.stop() } }
        let answer = try promote(promoted)
        XCTAssertEqual(answer.status, 200, "\(answer.body)")
        let report = try PromotionReport(json: answer.body)
        XCTAssertEqual(report.promised, ["bar-2", "patio"])
        XCTAssertEqual(report.fetched, PromotionReport.Fetched(from: "patio", entries: 1))
        XCTAssertEqual(report.seq, 2, "the promoted node serves the entry only patio held")
    }

    func testAVoterWhoseJournalNoLongerHoldsTheTailMakesTheCandidateRefuseTailUnavailable() throws {
        let (aDir, bDir) = try patioAheadOfBar2()
        // patio's journal is compacted away: its replica is at 2, its journal holds nothing.
        let db = try OrderDatabase(path: bDir + "/" + NodeDefaults.databaseFile)
        try db.deleteJournal(through: 2)
        db.close()
        let bus = DiscoveryBus()
        let promoted = try RunningNode(role: .slave, dataDirectory: aDir, name: "bar-2", discovery: bus.discovery())
        let voter = try RunningNode(role: .slave, dataDirectory: bDir, name: "patio", discovery: bus.discovery())
        defer { for node in [voter, promoted] { node.stop() } }
        let answer = try promote(promoted)
        XCTAssertEqual(answer.status, 409, "\(answer.body)")
        XCTAssertEqual(answer.body.objectValue?["error"]?.objectValue?["code"]?.stringValue, "tail_unavailable")
        _ = try waitForStatus(promoted, "bar-2 back in the slave role") { status -> Bool? in
            guard case .slave = status else { return nil }
            return true
        }
    }

    func testAPromotedSlaveServesAsMasterOnTheSameSeatAndPersistsItsTerm() throws {
        let (directory, url) = try slaveOfAStoppedMaster()
        let node = try RunningNode(role: .slave, dataDirectory: directory, name: "bar-2", masterURL: url)
        // The old master (a voter) is gone: 1 vote of 2 is no majority. Nothing changes.
        let refused = try promote(node)
        XCTAssertEqual(refused.status, 409, "\(refused.body)")
        let error = try XCTUnwrap(refused.body.objectValue?["error"]?.objectValue, "\(refused.body)")
        XCTAssertEqual(error["code"]?.stringValue, "no_majority")
        XCTAssertEqual(error["unreachable"], .array([.string("front")]))
        XCTAssertEqual(error["voters"], .array([.string("bar-2"), .string("front")]))
        _ = try waitForStatus(node, "the slave role again") { status -> Bool? in
            guard case .slave = status else { return nil }
            return true
        }
        XCTAssertEqual(try metadata(directory, ["sync.term"])["sync.term"], nil, "a withdrawn candidate persisted its term")

        // The operator attests the old master is gone.
        let answer = try promote(node, force: true)
        XCTAssertEqual(answer.status, 200, "\(answer.body)")
        let promoted = try PromotionReport(json: answer.body)
        XCTAssertEqual(promoted.term, 2)
        XCTAssertEqual(promoted.promised, ["bar-2"])
        XCTAssertEqual(promoted.unreachable, ["front"])
        XCTAssertTrue(promoted.forced)

        // The same process now answers as the master, on the same API socket, with the lock
        // still held and the orders it replicated.
        guard case .master(let m) = try node.status() else { return XCTFail("the promoted node is not a master") }
        XCTAssertEqual(m.store, "shop1")
        XCTAssertEqual(m.orders, 1)
        let config = NodeConfiguration(
            role: .master, dataDirectory: directory, store: nil, name: "x", serviceType: NodeDefaults.serviceType, port: 0,
            listenAddress: "127.0.0.1", masterURL: nil)
        XCTAssertThrowsError(try DataDirectory(claimingFor: config), "the data directory lock was let go")
        let again = try promote(node)
        XCTAssertEqual(again.body.objectValue?["error"]?.objectValue?["code"]?.stringValue, "not_a_slave")
        node.stop()

        let stored = try metadata(directory, ["node.role", "sync.term", "sync.vote", "store.id"])
        XCTAssertEqual(stored["node.role"], "master")
        XCTAssertEqual(stored["sync.term"], "2")
        XCTAssertEqual(stored["store.id"], "shop1")
        XCTAssertEqual(stored["sync.vote"]?.hasPrefix("2 "), true, "\(stored)")
        // Started again, the data directory is a master's.
        let restarted = try RunningNode(role: .master, dataDirectory: directory, name: "bar-2")
        guard case .master = try restarted.status() else { return XCTFail("not a master after a restart") }
        restarted.stop()
    }

    /// A slave promoted while its link to the master is open: the slave role's shutdown
    /// deadline (set when it closed that link) must not stop the role that follows it.
    func testAPromotionWithTheMasterLinkOpenIsNotStoppedByTheSlaveRolesShutdownTimer() throws {
        let master = try RunningNode(role: .master, dataDirectory: temporaryDirectory(), name: "front")
        defer { master.stop() }
        let slave = try master.pairedSlave(dataDirectory: temporaryDirectory(), name: "bar-2")
        defer { slave.stop() }
        _ = try waitForStatus(slave, "the slave to be live") { status -> Bool? in
            guard case .slave(let s) = status, s.master.state == .live else { return nil }
            return true
        }
        // The master answers no promise: forced, the candidacy lasts the election's deadline,
        // well past the slave role's shutdown grace.
        let answer = try promote(slave, force: true)
        XCTAssertEqual(answer.status, 200, "\(answer.body)")
        guard case .master = try slave.status() else { return XCTFail("the promoted role was stopped") }
    }

    /// What a promoted node's local API acknowledged as a slave (202, kept in its outbox) becomes
    /// the master's own writes: journalled in outbox order with their operation ids, and the
    /// outbox emptied. An order that came with the snapshot is journalled as it stands here.
    func testAPromotedNodeJournalsItsOwnOutboxInOrder() throws {
        let (directory, url) = try slaveOfAStoppedMaster()
        let snapshotted = try XCTUnwrap(try Self.database(directory) { try $0.allOrders().first?.uuid })
        let node = try RunningNode(role: .slave, dataDirectory: directory, name: "bar-2", masterURL: url)
        defer { node.stop() }
        let api = LocalAPIClient(dataDirectory: directory)
        let (b, c) = (UUID().uuidString.lowercased(), UUID().uuidString.lowercased())
        func body(_ fields: [(String, JSONValue)]) -> JSONValue { .object(JSONObject(fields)) }
        let writes = [
            try api.send(method: "POST", path: "/v1/orders", body: body([("uuid", .string(b)), ("customerName", .string("Bo"))])),
            try api.send(method: "PATCH", path: "/v1/orders/\(snapshotted)", body: body([("customerName", .string("Ann B."))])),
            try api.send(method: "POST", path: "/v1/orders", body: body([("uuid", .string(c)), ("customerName", .string("Cy"))])),
            try api.send(method: "DELETE", path: "/v1/orders/\(c)"),
        ]
        XCTAssertEqual(writes.map(\.status), [202, 202, 202, 202], "\(writes.map(\.body))")
        let queued = try Self.database(directory) { try $0.outboxEntries().map(\.opId) }
        XCTAssertEqual(queued.count, 4)

        let answer = try promote(node, force: true)
        XCTAssertEqual(answer.status, 200, "\(answer.body)")
        _ = try waitForStatus(node, "the outbox journalled") { status -> Bool? in
            guard case .master(let m) = status, m.seq == 5 else { return nil }
            return true
        }
        let (outbox, journal, orders) = try Self.database(directory) { db in
            (try db.outboxCount(), try db.journal(since: 1, orderUUID: nil, limit: 10), try db.allOrders())
        }
        XCTAssertEqual(outbox, 0, "the outbox is emptied")
        XCTAssertEqual(journal.map(\.opId), queued, "journalled in outbox order, with their operation ids")
        XCTAssertEqual(journal.map(\.operation), [.create, .update, .create, .remove])
        XCTAssertEqual(journal.map(\.term), [2, 2, 2, 2])
        XCTAssertEqual(Set(orders.map(\.uuid)), [snapshotted, b])
        XCTAssertEqual(orders.first { $0.uuid == snapshotted }?.customerName, "Ann B.")
        let updated = try XCTUnwrap(journal.dropFirst().first.map { String(decoding: $0.message, as: UTF8.self) })
        XCTAssertTrue(updated.contains("Ann B."), "the update carries the order as it stands: \(updated)")
    }

    /// Reads the store of `directory` (a second connection; the node may be running).
    static func database<T>(_ directory: String, _ body: (OrderDatabase) throws -> T) throws -> T {
        let db = try OrderDatabase(path: directory + "/" + NodeDefaults.databaseFile)
        defer { db.close() }
        return try body(db)
    }

    /// The public key in a data directory's node key file.
    func nodeKey(_ directory: String) throws -> [UInt8] {
        Array(try NodeIdentity.loadOrCreate(path: directory + "/" + NodeDefaults.keyFile).publicKey.rawRepresentation)
    }

    func waitLive(_ node: RunningNode, port: UInt16? = nil, _ what: String) throws {
        _ = try waitForStatus(node, what) { status -> Bool? in
            guard case .slave(let s) = status, s.master.state == .live else { return nil }
            if let port, !(s.master.url ?? "").contains(":\(port)") { return nil }
            return true
        }
    }

    func testTheOtherSlaveFollowsThePromotedMemberAndTheOldMasterStepsDown() throws {
        let (masterDir, aDir, bDir) = (temporaryDirectory(), temporaryDirectory(), temporaryDirectory())
        // The store admits StorePOS apps: a promoted node must too.
        let master = try RunningNode(
            role: .master, dataDirectory: masterDir, name: "front", configure: { $0.insecureStorePOS = true })
        guard case .master(let old) = try master.status() else { return XCTFail("no master") }
        let order = JSONValue.object(JSONObject([("uuid", .string(UUID().uuidString.lowercased())), ("customerName", .string("Ann"))]))
        XCTAssertEqual(try LocalAPIClient(dataDirectory: masterDir).send(method: "POST", path: "/v1/orders", body: order).status, 201)
        let a = try master.pairedSlave(dataDirectory: aDir, name: "bar-2")
        let b = try master.pairedSlave(dataDirectory: bDir, name: "patio")
        try waitLive(a, "bar-2 to sync")
        try waitLive(b, "patio to sync")
        // A second order reaches both as a broadcast: their standby journals hold seq 2 after
        // the snapshot of seq 1.
        let second = JSONValue.object(JSONObject([("uuid", .string(UUID().uuidString.lowercased())), ("customerName", .string("Bo"))]))
        XCTAssertEqual(try LocalAPIClient(dataDirectory: masterDir).send(method: "POST", path: "/v1/orders", body: second).status, 201)
        for node in [a, b] {
            _ = try waitForStatus(node, "the second order") { status -> Bool? in
                guard case .slave(let s) = status, s.seq == 2 else { return nil }
                return true
            }
        }
        a.stop()
        b.stop()
        // The old master's last order reaches no standby: a divergent tail of term 1.
        let lost = UUID().uuidString.lowercased()
        let third = JSONValue.object(JSONObject([("uuid", .string(lost)), ("customerName", .string("Cy"))]))
        XCTAssertEqual(try LocalAPIClient(dataDirectory: masterDir).send(method: "POST", path: "/v1/orders", body: third).status, 201)
        master.stop()
        // Their standby copies name the store's members, as the master sent them.
        let (masterKey, aKey) = (try nodeKey(masterDir), try nodeKey(aDir))

        // Both slaves find masters through one simulated LAN; the old master is gone.
        let bus = DiscoveryBus()
        // A rogue on the LAN announces the store at term 999 under a key no member holds.
        let rogue = bus.discovery()
        try rogue.start { _ in }
        rogue.publish(
            ServiceAnnouncement(
                name: "Rogue", type: NodeDefaults.serviceType, port: 9,
                txt: [
                    ("proto", "ordersync/1"), ("store", "shop1"), ("epoch", old.epoch), ("term", "999"), ("role", "master"),
                    ("id", NodeIdentity.nodeId(publicKey: Array(repeating: 7, count: 32))),
                ]))
        let promoted = try RunningNode(role: .slave, dataDirectory: aDir, name: "bar-2", discovery: bus.discovery())
        let follower = try RunningNode(role: .slave, dataDirectory: bDir, name: "patio", discovery: bus.discovery())
        let answer = try promote(promoted)
        XCTAssertEqual(answer.status, 200, "\(answer.body)")
        let report = try PromotionReport(json: answer.body)
        XCTAssertEqual(report.term, 2, "the rogue's term 999 is not counted")
        XCTAssertEqual(report.seq, 2, "the promoted node serves the journal its standby copy kept")
        XCTAssertEqual(report.promised, ["bar-2", "patio"], "patio pre-voted by connecting, then promised")
        XCTAssertEqual(report.unreachable, ["front"])
        XCTAssertFalse(report.forced)
        guard case .master(let m) = try promoted.status() else { return XCTFail("not promoted") }
        let published = try XCTUnwrap(bus.published.first { $0.port == m.port })
        XCTAssertEqual(published.txt["term"], "2")
        XCTAssertEqual(published.name, "POSMaster", "StorePOS apps find the promoted master")
        XCTAssertEqual(published.txt["role"], "master")
        XCTAssertEqual(published.txt["id"], NodeIdentity.nodeId(publicKey: aKey))
        XCTAssertEqual(published.txt["epoch"], old.epoch, "the promoted node serves the store's lineage")
        try waitLive(follower, port: m.port, "patio to follow bar-2")

        // The old master comes back on its data directory: it sees term 2 and steps down.
        let back = try RunningNode(role: .master, dataDirectory: masterDir, name: "front", discovery: bus.discovery())
        try waitLive(back, port: m.port, "the old master to step down and follow bar-2")
        // Its last order, which no standby held, is re-queued and applied by bar-2, once.
        for node in [promoted, follower, back] {
            _ = try waitForStatus(node, "the old master's divergent order everywhere") { status -> Bool? in
                switch status {
                case .master(let s): return s.orders == 3 ? true : nil
                case .slave(let s): return s.orders == 3 && s.outbox == 0 && s.seq == 3 ? true : nil
                }
            }
        }
        let kept = try LocalAPIClient(dataDirectory: aDir).send(method: "GET", path: "/v1/orders/\(lost)")
        XCTAssertEqual(kept.status, 200, "\(kept.body)")
        for node in [back, follower, promoted] { node.stop() }
        let journal = try Self.database(aDir) { try $0.journal(since: 0, orderUUID: lost, limit: 10) }
        XCTAssertEqual(journal.map(\.term), [2], "the divergent order is applied once, in term 2")

        let followed = try metadata(bDir, ["sync.term", "sync.vote", "standby.base", "replica.last_seq"])
        XCTAssertEqual(followed["sync.vote"], "2 \(NodeIdentity.nodeId(publicKey: aKey))", "patio's promise is on its disk")
        XCTAssertEqual(followed["sync.term"], "2")
        XCTAssertEqual(followed["standby.base"], "1", "the follower caught up without a snapshot")
        XCTAssertEqual(followed["replica.last_seq"], "3", "and the old master's re-queued order after it")
        let trust = try XCTUnwrap(try MasterTrust.load(path: bDir + "/" + NodeDefaults.masterTrustFile))
        XCTAssertEqual(trust.master, NodeIdentity.nodeId(publicKey: aKey))
        XCTAssertTrue(trust.knownMasterIds.contains(NodeIdentity.nodeId(publicKey: masterKey)), "the earlier id is kept")
        let stepped = try metadata(masterDir, ["node.role", "replica.epoch"])
        XCTAssertEqual(stepped["node.role"], "slave")
        XCTAssertEqual(stepped["replica.epoch"], old.epoch)
    }
}
