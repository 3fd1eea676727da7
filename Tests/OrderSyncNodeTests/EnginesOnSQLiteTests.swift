import Foundation
import JSON
import OrderStore
import SyncCore
import WireTestSupport
import XCTest

@testable import OrderSyncNode

/// The master and slave engines on their real SQLite stores.
final class EnginesOnSQLiteTests: XCTestCase {
    var dir: String!

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "ordersync-node-tests-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    func order(_ uuid: String, _ name: String) -> JSONValue {
        .object(
            JSONObject([
                ("uuid", .string(uuid)), ("customerName", .string(name)),
                ("created", .string("2016-01-12T21:35:16+0800")),
            ]))
    }

    func testMasterNumbersJournalsAndAnswersRepeatsFromTheJournal() throws {
        let db = try OrderDatabase(path: dir + "/m.sqlite")
        let ledger = try MasterEngine(store: SQLiteMasterStore(db: db), storeId: "s", epoch: "e")
        let a = UUID().uuidString, b = UUID().uuidString
        let first = ledger.apply(
            OperationMessage(operation: .create, orders: [order(a, "A"), order(b, "B")], opId: "op-1"), origin: "t1", now: 1_000)
        XCTAssertEqual(first.seq, 1)
        XCTAssertEqual(first.applied.count, 2)
        XCTAssertFalse(first.isRepeat)
        let repeatOutcome = ledger.apply(
            OperationMessage(operation: .create, orders: [order(a, "A"), order(b, "B")], opId: "op-1"), origin: "t1", now: 1_000)
        XCTAssertTrue(repeatOutcome.isRepeat)
        XCTAssertEqual(repeatOutcome.seq, 1)
        XCTAssertEqual(repeatOutcome.broadcast, first.broadcast)
        XCTAssertEqual(try db.lastJournalSeq(), 1, "a repeated opId is not applied again")

        let bad = ledger.apply(
            OperationMessage(
                operation: .update,
                orders: [
                    .object(JSONObject([("uuid", .string(a)), ("tableSize", .int(5))])),
                    .object(JSONObject([("uuid", .string(UUID().uuidString))])),
                ]), origin: "t2", now: 1_000)
        XCTAssertEqual(bad.seq, 2)
        XCTAssertEqual(bad.errors.map(\.code), [.notFound])
        XCTAssertEqual(try db.order(uuid: a)?.tableSize, 5)
        XCTAssertEqual(try db.order(uuid: a)?.version, 2)

        let nothing = ledger.apply(
            OperationMessage(operation: .remove, orders: [.object(JSONObject([("uuid", .string("x"))]))]), origin: "t2", now: 1_000)
        XCTAssertNil(nothing.seq)
        XCTAssertNil(nothing.broadcast)
        XCTAssertEqual(try db.lastJournalSeq(), 2)
        let journal = try db.journal(since: 0, orderUUID: nil, limit: 10)
        XCTAssertEqual(journal.map(\.seq), [1, 2])
        XCTAssertEqual(journal.map(\.origin), ["t1", "t2"])

        // A new ledger on the same file continues the numbering.
        let again = try MasterEngine(store: SQLiteMasterStore(db: db), storeId: "s", epoch: "e")
        XCTAssertEqual(again.lastSeq, 2)
    }

    func testSnapshotPartsThenLiveOperationsInOrder() throws {
        let mdb = try OrderDatabase(path: dir + "/m.sqlite")
        let ledger = try MasterEngine(store: SQLiteMasterStore(db: mdb), storeId: "s", epoch: "e")
        var uuids: [String] = []
        for i in 0..<5 {
            let u = UUID().uuidString
            uuids.append(u)
            _ = ledger.apply(OperationMessage(operation: .create, orders: [order(u, "c\(i)")]), origin: "m", now: 1_000)
        }
        ledger.snapshotChunk = 2
        let snap = try ledger.snapshotMessages()
        XCTAssertEqual(snap.messages.count, 3)
        XCTAssertEqual(snap.count, 5)

        let sdb = try OrderDatabase(path: dir + "/s.sqlite")
        let stale = Order(uuid: UUID().uuidString, customerName: "stale", created: OrderTimestamp(epochMillis: 0))
        try sdb.insertOrder(stale)
        let slave = try SlaveEngine(store: SQLiteSlaveStore(db: sdb), terminalId: "t", terminalName: "bar", configuredStore: "s")
        _ = slave.linkOpened()
        for m in snap.messages.dropLast() {
            _ = slave.received(m, now: 0)
            XCTAssertEqual(slave.lastSeq, 0, "a snapshot is applied only once every part is in")
        }
        _ = slave.received(snap.messages.last!, now: 0)
        XCTAssertNil(try sdb.order(uuid: stale.uuid), "a snapshot replaces the replica")
        XCTAssertEqual(try sdb.orderCount(), 5)
        XCTAssertEqual(slave.lastSeq, 5)
        XCTAssertEqual(slave.joinedStore, "s")

        let live = ledger.apply(
            OperationMessage(operation: .remove, orders: [.object(JSONObject([("uuid", .string(uuids[0]))]))]), origin: "m", now: 1_000)
        let text = try XCTUnwrap(live.broadcast)
        XCTAssertEqual(slave.received(text, now: 0).filter { if case .log = $0 { return false } else { return true } }, [.scheduleAck])
        XCTAssertEqual(slave.lastSeq, 6)
        XCTAssertEqual(slave.received(text, now: 0), [], "an operation already applied is ignored")
        let skipped = text.text.replacingOccurrences(of: "\"seq\":6", with: "\"seq\":9")
        XCTAssertTrue(slave.received(skipped, now: 0).contains(.resync(reason: "resync")), "a gap makes the slave catch up again")
        XCTAssertEqual(slave.lastSeq, 6)
        XCTAssertEqual(try sdb.orderCount(), 4)
        XCTAssertEqual(try sdb.allOrders().map(\.uuid), try mdb.allOrders().map(\.uuid))
        // The replica's position survives a restart.
        XCTAssertEqual(
            try SlaveEngine(store: SQLiteSlaveStore(db: sdb), terminalId: "t", terminalName: "bar", configuredStore: nil).lastSeq, 6)
    }

    func testAnOutboxEntryLeavesWithTheBroadcastThatCarriesItAndARefusalSurvivesARestart() throws {
        let mdb = try OrderDatabase(path: dir + "/m.sqlite")
        let master = try MasterEngine(store: SQLiteMasterStore(db: mdb), storeId: "s", epoch: "e")
        let sdb = try OrderDatabase(path: dir + "/s.sqlite")
        let slave = try SlaveEngine(store: SQLiteSlaveStore(db: sdb), terminalId: "t", terminalName: "bar", configuredStore: "s")
        let a = UUID().uuidString.lowercased(), b = UUID().uuidString.lowercased()
        // Order b exists on the master only, completed: an update from the slave is refused.
        _ = master.apply(OperationMessage(operation: .create, orders: [order(b, "B")]), origin: "m", now: 1_000)
        _ = master.apply(
            OperationMessage(operation: .update, orders: [.object(JSONObject([("uuid", .string(b)), ("status", .string("completed"))]))]),
            origin: "m", now: 1_000)
        var local = try XCTUnwrap(mdb.order(uuid: b))
        local.status = .open
        try sdb.insertOrder(local)

        // Offline: both changes go to the outbox and show as pending.
        let (w, _) = slave.localWrite(OperationMessage(operation: .create, orders: [order(a, "A")]), opId: "op-a", now: 5_000)
        XCTAssertNil(w.failure)
        XCTAssertFalse(w.sent)
        let (w2, _) = slave.localWrite(
            OperationMessage(operation: .update, orders: [.object(JSONObject([("uuid", .string(b)), ("note", .string("x"))]))]),
            opId: "op-b", now: 5_000)
        XCTAssertNil(w2.failure)
        XCTAssertEqual(try sdb.outboxCount(), 2)
        XCTAssertEqual(slave.syncState(of: a), .pending)

        // Connected: hello, catch-up, ready, then the outbox goes out in order.
        let hello = slave.linkOpened()
        guard case .send(let helloText)? = hello.first else { return XCTFail("no hello") }
        _ = master.peerConnected(1, address: "10.0.0.2:5000", terminal: AuthenticatedTerminal(nodeId: "t", name: "bar"))
        var toSlave: [String] = []
        var toMaster: [String] = []
        func run(_ actions: [MasterEngine.Action]) {
            for x in actions {
                switch x {
                case .send(1, let t): toSlave.append(t.text)
                case .broadcast(let t, let peers) where peers.contains(1): toSlave.append(t.text)
                default: break
                }
            }
        }
        run(master.received(helloText, from: 1, now: 6_000))
        XCTAssertEqual(master.peers[1]?.outbox, 2, "the hello says how many changes wait in the outbox")
        var acksAsked = 0
        while !toSlave.isEmpty || !toMaster.isEmpty {
            for t in toSlave {
                for x in slave.received(t, now: 6_000) {
                    if case .send(let m) = x { toMaster.append(m.text) }
                    if case .scheduleAck = x { acksAsked += 1 }
                }
            }
            toSlave = []
            for t in toMaster { run(master.received(t, from: 1, now: 6_000)) }
            toMaster = []
        }
        XCTAssertEqual(try sdb.outboxCount(), 0, "both entries were answered")
        // The outbox emptied: the next ack says so, and the master keeps it for the terminal.
        XCTAssertGreaterThan(acksAsked, 0)
        XCTAssertEqual(master.peers[1]?.outbox, 2, "not known before the ack")
        XCTAssertEqual(slave.ackDue(), [.send(ClientMessage.encodeAck(seq: slave.ackSeq, outbox: 0, held: slave.lastSeq))])
        run(master.received(ClientMessage.encodeAck(seq: slave.ackSeq, outbox: 0), from: 1, now: 6_500))
        XCTAssertEqual(master.peers[1]?.outbox, 0)
        _ = master.peerDisconnected(1, now: 7_000)
        XCTAssertEqual(try mdb.knownTerminals().first { $0.id == "t" }?.outbox, 0, "kept for while it is away")
        // The slave's change feed, numbered by the replica: each local change pending, the
        // master's snapshot (a new slave) and changes with its seq, the outcome of each local change.
        let feed = try sdb.feed(after: 0, limit: 100).map { try XCTUnwrap(JSONParser.parse(Array($0.text.utf8)).objectValue) }
        XCTAssertEqual(feed.map { $0["seq"] }, (1...feed.count).map { .int(Int64($0)) })
        XCTAssertEqual(feed.prefix(2).map { $0["pending"] }, [.bool(true), .bool(true)])
        XCTAssertEqual(feed.prefix(2).map { $0["opId"] }, [.string("op-a"), .string("op-b")])
        let fromMaster = feed.filter { $0["masterSeq"] != nil && $0["outcome"] == nil }
        XCTAssertEqual(fromMaster.map { $0["operation"] }, [.string("snapshot"), .string("create")])
        XCTAssertEqual(fromMaster.map { $0["masterSeq"] }, [.int(2), .int(3)])
        let outcomes = Dictionary(
            uniqueKeysWithValues: feed.filter { $0["operation"] == .string("outcome") }.map { ($0["opId"]?.stringValue ?? "", $0) })
        XCTAssertEqual(outcomes["op-a"]?["outcome"], .string("synced"))
        XCTAssertEqual(outcomes["op-a"]?["masterSeq"], .int(3))
        XCTAssertEqual(outcomes["op-b"]?["outcome"], .string("rejected"))
        XCTAssertEqual(outcomes["op-b"]?["error"]?.objectValue?["code"], .string("invalid_transition"))
        XCTAssertEqual(slave.syncState(of: a), .synced)
        guard case .rejected(let e) = slave.syncState(of: b) else { return XCTFail("the refusal is shown") }
        XCTAssertEqual(e.code, .invalidTransition)
        XCTAssertEqual(try mdb.journalEntry(opId: "op-a")?.seq, 3)
        XCTAssertEqual(try mdb.order(uuid: a)?.customerName, "A")
        // The refusal is still shown after a restart, until the next local change to the order.
        let restarted = try SlaveEngine(store: SQLiteSlaveStore(db: sdb), terminalId: "t", terminalName: "bar", configuredStore: "s")
        guard case .rejected(let kept) = restarted.syncState(of: b) else { return XCTFail("the refusal was not kept") }
        XCTAssertEqual(kept.code, e.code)
        XCTAssertEqual(kept.message, e.message)
        _ = restarted.localWrite(
            OperationMessage(operation: .update, orders: [.object(JSONObject([("uuid", .string(a)), ("note", .string("y"))]))]),
            opId: "op-c", now: 7_000)
        XCTAssertEqual(restarted.syncState(of: b), .rejected(kept))
        XCTAssertEqual(restarted.syncState(of: a), .pending)
        XCTAssertTrue(slave.needsSnapshot, "a refused change sends the replica back to the master's truth")
        XCTAssertTrue(restarted.needsSnapshot, "and that survives a restart")
    }
}
