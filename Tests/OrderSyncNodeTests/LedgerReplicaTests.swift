import Foundation
import XCTest
@testable import OrderSyncNode
import OrderStore
import SyncCore

/// The master's write path and a slave's replica on real SQLite files.
final class LedgerReplicaTests: XCTestCase {
    var dir: String!

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "ordersync-node-tests-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    func order(_ uuid: String, _ name: String) -> JSONValue {
        .object(JSONObject([("uuid", .string(uuid)), ("customerName", .string(name)),
                            ("created", .string("2016-01-12T21:35:16+0800"))]))
    }

    func testLedgerNumbersJournalsAndAnswersRepeatsFromTheJournal() throws {
        let db = try OrderDatabase(path: dir + "/m.sqlite")
        let ledger = try MasterLedger(db: db, store: "s", epoch: "e")
        let a = UUID().uuidString, b = UUID().uuidString
        let first = ledger.apply(OperationMessage(operation: .create, orders: [order(a, "A"), order(b, "B")], opId: "op-1"), origin: "t1")
        XCTAssertEqual(first.seq, 1)
        XCTAssertEqual(first.applied.count, 2)
        XCTAssertFalse(first.isRepeat)
        let repeatOutcome = ledger.apply(OperationMessage(operation: .create, orders: [order(a, "A"), order(b, "B")], opId: "op-1"), origin: "t1")
        XCTAssertTrue(repeatOutcome.isRepeat)
        XCTAssertEqual(repeatOutcome.seq, 1)
        XCTAssertEqual(repeatOutcome.broadcast, first.broadcast)
        XCTAssertEqual(try db.lastJournalSeq(), 1, "a repeated opId is not applied again")

        let bad = ledger.apply(OperationMessage(operation: .update, orders: [
            .object(JSONObject([("uuid", .string(a)), ("tableSize", .int(5))])),
            .object(JSONObject([("uuid", .string(UUID().uuidString))])),
        ]), origin: "t2")
        XCTAssertEqual(bad.seq, 2)
        XCTAssertEqual(bad.errors.map(\.code), [.notFound])
        XCTAssertEqual(try db.order(uuid: a)?.tableSize, 5)
        XCTAssertEqual(try db.order(uuid: a)?.version, 2)

        let nothing = ledger.apply(OperationMessage(operation: .remove, orders: [.object(JSONObject([("uuid", .string("x"))]))]), origin: "t2")
        XCTAssertNil(nothing.seq)
        XCTAssertNil(nothing.broadcast)
        XCTAssertEqual(try db.lastJournalSeq(), 2)
        let journal = try db.journal(since: 0, orderUUID: nil, limit: 10)
        XCTAssertEqual(journal.map(\.seq), [1, 2])
        XCTAssertEqual(journal.map(\.origin), ["t1", "t2"])

        // A new ledger on the same file continues the numbering.
        let again = try MasterLedger(db: db, store: "s", epoch: "e")
        XCTAssertEqual(again.lastSeq, 2)
    }

    func testSnapshotPartsThenLiveOperationsInOrder() throws {
        let mdb = try OrderDatabase(path: dir + "/m.sqlite")
        let ledger = try MasterLedger(db: mdb, store: "s", epoch: "e")
        var uuids: [String] = []
        for i in 0..<5 {
            let u = UUID().uuidString
            uuids.append(u)
            _ = ledger.apply(OperationMessage(operation: .create, orders: [order(u, "c\(i)")]), origin: "m")
        }
        let snap = try ledger.snapshotMessages(chunk: 2)
        XCTAssertEqual(snap.messages.count, 3)
        XCTAssertEqual(snap.count, 5)

        let sdb = try OrderDatabase(path: dir + "/s.sqlite")
        let stale = Order(uuid: UUID().uuidString, customerName: "stale", created: OrderTimestamp(epochMillis: 0))
        try sdb.insertOrder(stale)
        let replica = try SlaveReplica(db: sdb)
        var steps: [SlaveReplica.Step] = []
        for m in snap.messages {
            guard case .success(.applied(let op, let orders, let seq, _, _, let part)) = ServerMessage.decode(m) else {
                return XCTFail("snapshot message not decoded")
            }
            steps.append(try replica.apply(operation: op, orders: orders, seq: seq, snapshot: part, store: "s"))
        }
        XCTAssertEqual(steps, [.snapshotPartKept, .snapshotPartKept, .snapshotApplied(count: 5)])
        XCTAssertNil(try sdb.order(uuid: stale.uuid), "a snapshot replaces the replica")
        XCTAssertEqual(replica.lastSeq, 5)
        XCTAssertEqual(replica.joinedStore, "s")

        let live = ledger.apply(OperationMessage(operation: .remove, orders: [.object(JSONObject([("uuid", .string(uuids[0]))]))]), origin: "m")
        guard case .success(.applied(let op, let orders, let seq, _, _, nil)) = ServerMessage.decode(live.broadcast!) else {
            return XCTFail()
        }
        XCTAssertEqual(try replica.apply(operation: op, orders: orders, seq: seq, snapshot: nil, store: nil), .applied)
        XCTAssertEqual(try replica.apply(operation: op, orders: orders, seq: seq, snapshot: nil, store: nil), .duplicate)
        XCTAssertEqual(try replica.apply(operation: op, orders: orders, seq: 9, snapshot: nil, store: nil), .gap(expected: 7, got: 9))
        XCTAssertEqual(try sdb.orderCount(), 4)
        XCTAssertEqual(try sdb.allOrders().map(\.uuid), try mdb.allOrders().map(\.uuid))
        // The replica's position survives a restart.
        XCTAssertEqual(try SlaveReplica(db: sdb).lastSeq, 6)
    }
}

/// Resumable catch-up from the journal, and tombstones.
final class CatchUpTests: XCTestCase {
    var dir: String!

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "ordersync-catchup-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    func create(_ u: String) -> OperationMessage {
        OperationMessage(operation: .create, orders: [.object(JSONObject([("uuid", .string(u)), ("customerName", .string("c"))]))])
    }

    func testCatchUpSendsExactlyTheMissedOperationsOrNilForASnapshot() throws {
        let db = try OrderDatabase(path: dir + "/m.sqlite")
        let ledger = try MasterLedger(db: db, store: "s", epoch: "e1")
        for _ in 0..<5 { _ = ledger.apply(create(UUID().uuidString), origin: "t") }
        let missed = try XCTUnwrap(ledger.catchUp(from: 2, epoch: "e1"))
        XCTAssertEqual(missed.count, 3)
        let seqs = missed.compactMap { text -> Int64? in
            if case .success(.applied(_, _, let seq, _, _, _)) = ServerMessage.decode(text) { return seq }
            return nil
        }
        XCTAssertEqual(seqs, [3, 4, 5])
        XCTAssertEqual(try ledger.catchUp(from: 5, epoch: "e1"), [])
        XCTAssertNil(try ledger.catchUp(from: 2, epoch: "other"), "another epoch needs a snapshot")
        XCTAssertNil(try ledger.catchUp(from: 2, epoch: nil))
        XCTAssertNil(try ledger.catchUp(from: 9, epoch: "e1"), "a sequence from the future needs a snapshot")
        try db.deleteJournal(through: 3)
        XCTAssertNil(try ledger.catchUp(from: 2, epoch: "e1"), "compacted entries need a snapshot")
        XCTAssertEqual(try ledger.catchUp(from: 3, epoch: "e1")?.count, 2)
    }

    func testARemovedOrderIsNeverCreatedAgain() throws {
        let db = try OrderDatabase(path: dir + "/m.sqlite")
        let ledger = try MasterLedger(db: db, store: "s", epoch: "e1")
        let u = UUID().uuidString
        XCTAssertEqual(ledger.apply(create(u), origin: "t").applied.count, 1)
        let removed = ledger.apply(OperationMessage(operation: .remove, orders: [.object(JSONObject([("uuid", .string(u))]))]), origin: "t")
        XCTAssertEqual(removed.applied.count, 1)
        let again = ledger.apply(create(u.lowercased()), origin: "late terminal")
        XCTAssertEqual(again.errors.map(\.code), [.removed])
        XCTAssertNil(try db.order(uuid: u))
        XCTAssertEqual(LocalAPIRoute.httpStatus(for: .removed), 410)
    }
}

/// Tombstones stay until every known terminal has passed them.
final class TombstoneTests: XCTestCase {
    func testTombstonesAreCompactedOnlyOnceEveryKnownTerminalPassedThem() throws {
        let dir = NSTemporaryDirectory() + "ordersync-tomb-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let db = try OrderDatabase(path: dir + "/m.sqlite")
        let ledger = try MasterLedger(db: db, store: "s", epoch: "e")
        let u = UUID().uuidString
        _ = ledger.apply(OperationMessage(operation: .create, orders: [.object(JSONObject([("uuid", .string(u))]))]), origin: "t")
        _ = ledger.apply(OperationMessage(operation: .remove, orders: [.object(JSONObject([("uuid", .string(u))]))]), origin: "t")
        XCTAssertTrue(try db.hasTombstone(uuid: u))
        let now = MasterLedger.now().epochMillis
        try db.saveTerminal(KnownTerminal(id: "a", name: "bar", address: "x", ackedSeq: 1, lastSeenMillis: now))
        try db.saveTerminal(KnownTerminal(id: "b", name: "patio", address: "y", ackedSeq: 2, lastSeenMillis: now))
        XCTAssertEqual(try ledger.compactTombstones(), 0, "terminal a has not passed the remove (seq 2)")
        XCTAssertTrue(try db.hasTombstone(uuid: u))
        try db.saveTerminal(KnownTerminal(id: "a", name: "bar", address: "x", ackedSeq: 2, lastSeenMillis: now))
        XCTAssertEqual(try ledger.compactTombstones(), 1)
        XCTAssertFalse(try db.hasTombstone(uuid: u))

        // A terminal gone past the horizon is forgotten and no longer holds tombstones back.
        let v = UUID().uuidString
        _ = ledger.apply(OperationMessage(operation: .create, orders: [.object(JSONObject([("uuid", .string(v))]))]), origin: "t")
        _ = ledger.apply(OperationMessage(operation: .remove, orders: [.object(JSONObject([("uuid", .string(v))]))]), origin: "t")
        try db.saveTerminal(KnownTerminal(id: "a", name: "bar", address: "x", ackedSeq: 4, lastSeenMillis: now))
        try db.saveTerminal(KnownTerminal(id: "old", name: "lost", address: "z", ackedSeq: 0,
                                          lastSeenMillis: now - MasterLedger.terminalHorizonMillis - 1000))
        try db.saveTerminal(KnownTerminal(id: "b", name: "patio", address: "y", ackedSeq: 4, lastSeenMillis: now))
        XCTAssertEqual(try ledger.compactTombstones(), 1)
        XCTAssertEqual(try db.knownTerminals().map(\.id), ["a", "b"])
    }
}
