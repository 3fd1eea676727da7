import Foundation
import JSON
import OrderStore
import SyncCore
import XCTest

@testable import NodePolicy
@testable import OrderSyncNode

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
        let ledger = try MasterEngine(store: SQLiteMasterStore(db: db), storeId: "s", epoch: "e1")
        for _ in 0..<5 { _ = ledger.apply(create(UUID().uuidString), origin: "t", now: 1_000) }
        let missed = try XCTUnwrap(ledger.catchUp(from: 2, epoch: "e1"))
        XCTAssertEqual(missed.count, 3)
        let seqs = missed.compactMap { text -> Int64? in
            if case .success(.applied(_, _, let seq, _, _, _, _)) = ServerMessage.decode(text) { return seq }
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
        let ledger = try MasterEngine(store: SQLiteMasterStore(db: db), storeId: "s", epoch: "e1")
        let u = UUID().uuidString
        XCTAssertEqual(ledger.apply(create(u), origin: "t", now: 1_000).applied.count, 1)
        let removed = ledger.apply(
            OperationMessage(operation: .remove, orders: [.object(JSONObject([("uuid", .string(u))]))]), origin: "t", now: 1_000)
        XCTAssertEqual(removed.applied.count, 1)
        let again = ledger.apply(create(u.lowercased()), origin: "late terminal", now: 1_000)
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
        let ledger = try MasterEngine(store: SQLiteMasterStore(db: db), storeId: "s", epoch: "e")
        let u = UUID().uuidString
        _ = ledger.apply(
            OperationMessage(operation: .create, orders: [.object(JSONObject([("uuid", .string(u))]))]), origin: "t", now: 1_000)
        _ = ledger.apply(
            OperationMessage(operation: .remove, orders: [.object(JSONObject([("uuid", .string(u))]))]), origin: "t", now: 1_000)
        XCTAssertTrue(try db.hasTombstone(uuid: u))
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        try db.saveTerminal(KnownTerminal(id: "a", name: "bar", address: "x", ackedSeq: 1, lastSeenMillis: now))
        try db.saveTerminal(KnownTerminal(id: "b", name: "patio", address: "y", ackedSeq: 2, lastSeenMillis: now))
        _ = ledger.maintenance(now: now)
        XCTAssertEqual(try db.tombstoneCount(), 1, "terminal a has not passed the remove (seq 2)")
        XCTAssertTrue(try db.hasTombstone(uuid: u))
        try db.saveTerminal(KnownTerminal(id: "a", name: "bar", address: "x", ackedSeq: 2, lastSeenMillis: now))
        _ = ledger.maintenance(now: now)
        XCTAssertFalse(try db.hasTombstone(uuid: u))

        // A terminal gone past the horizon is forgotten and no longer holds tombstones back.
        let v = UUID().uuidString
        _ = ledger.apply(
            OperationMessage(operation: .create, orders: [.object(JSONObject([("uuid", .string(v))]))]), origin: "t", now: 1_000)
        _ = ledger.apply(
            OperationMessage(operation: .remove, orders: [.object(JSONObject([("uuid", .string(v))]))]), origin: "t", now: 1_000)
        try db.saveTerminal(KnownTerminal(id: "a", name: "bar", address: "x", ackedSeq: 4, lastSeenMillis: now))
        try db.saveTerminal(
            KnownTerminal(
                id: "old", name: "lost", address: "z", ackedSeq: 0,
                lastSeenMillis: now - ledger.terminalHorizonMillis - 1000))
        try db.saveTerminal(KnownTerminal(id: "b", name: "patio", address: "y", ackedSeq: 4, lastSeenMillis: now))
        _ = ledger.maintenance(now: now)
        XCTAssertEqual(try db.tombstoneCount(), 0)
        XCTAssertEqual(try db.knownTerminals().map(\.id), ["a", "b"])

        // The journal is compacted only below what every known terminal applied and beyond the
        // newest entries kept; a terminal behind then gets a snapshot instead of a catch-up.
        ledger.journalKeepNewest = 1
        ledger.journalKeepMillis = 0
        try db.saveTerminal(KnownTerminal(id: "a", name: "bar", address: "x", ackedSeq: 2, lastSeenMillis: now))
        _ = ledger.maintenance(now: now + 1)
        XCTAssertEqual(try db.firstJournalSeq(), 3, "terminal a applied up to 2 only")
        XCTAssertNil(try ledger.catchUp(from: 1, epoch: "e"))
        XCTAssertEqual(try ledger.catchUp(from: 2, epoch: "e")?.count, 2)
        try db.saveTerminal(KnownTerminal(id: "a", name: "bar", address: "x", ackedSeq: 4, lastSeenMillis: now))
        _ = ledger.maintenance(now: now + 1)
        XCTAssertEqual(try db.firstJournalSeq(), 4, "the newest entry is kept")

    }
}
