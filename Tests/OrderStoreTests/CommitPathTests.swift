import Foundation
import SyncCore
import XCTest

@testable import OrderStore

/// The store's commit path at the places the mutation run (Docs/MUTANTS.md) found unguarded:
/// journal compaction, the outbox's answers about itself, the change feed of a slave commit,
/// and a COMMIT that fails with its transaction still open.
final class CommitPathTests: StoreTestCase {
    /// A journal entry `seq`, recorded at `millis`.
    private func entry(_ seq: Int64, at millis: Int64) -> JournalEntry {
        JournalEntry(
            seq: seq, opId: "op-\(seq)", origin: "t", operation: .create, orderUUIDs: [UUID().uuidString.lowercased()],
            message: Array("{\"seq\":\(seq)}".utf8), recordedAtMillis: millis)
    }

    /// Compaction removes the oldest entries up to the given sequence, and only the run of
    /// them recorded before the horizon: an entry recorded after it stops the run.
    func testCompactionRemovesTheOldRunUpToTheSequenceAndNoMore() throws {
        let db = try openDatabase()
        for (seq, millis) in [(1, 100), (2, 200), (3, 900), (4, 300), (5, 400)] as [(Int64, Int64)] {
            try db.appendJournal(entry(seq, at: millis))
        }
        XCTAssertEqual(try db.compactJournal(through: 5, recordedBefore: 500), 2, "entry 3 is young: the run stops there")
        XCTAssertEqual(try db.firstJournalSeq(), 3)
        XCTAssertNil(try db.journalEntry(opId: "op-2"), "a compacted entry's operation id is gone with it")
        XCTAssertEqual(try db.compactJournal(through: 3, recordedBefore: 1_000), 1)
        XCTAssertEqual(try db.compactJournal(through: 4, recordedBefore: 1_000), 1)
        XCTAssertEqual(try db.journal(since: 0, orderUUID: nil, limit: 10).map(\.seq), [5], "never past `through`")
        XCTAssertEqual(try db.compactJournal(through: 0, recordedBefore: 1_000), 0)
        XCTAssertEqual(try db.lastJournalSeq(), 5)
    }

    /// The master engine's store compacts through the database (the engine's maintenance
    /// relies on its count).
    func testTheMasterStoreCompactsTheJournal() throws {
        let db = try openDatabase()
        for seq in 1...3 { try db.appendJournal(entry(Int64(seq), at: 100)) }
        let store = SQLiteMasterStore(db: db)
        XCTAssertEqual(try store.compactJournal(through: 2, recordedBefore: 200), 2)
        XCTAssertEqual(try store.firstJournalSeq(), 3)
    }

    /// An appended outbox entry comes back with the position it was stored at; deleting an
    /// entry says whether there was one.
    func testTheOutboxReportsItsPositionsAndWhatItDeleted() throws {
        let db = try openDatabase()
        let first = try db.appendOutbox(OutboxEntry(opId: "a", message: Array("{}".utf8), orderKeys: ["k"], createdMillis: 1))
        let second = try db.appendOutbox(OutboxEntry(opId: "b", message: Array("{}".utf8), orderKeys: ["k"], createdMillis: 2))
        XCTAssertEqual(try db.outboxEntries().map(\.position), [first.position, second.position])
        XCTAssertGreaterThan(second.position, first.position)
        XCTAssertGreaterThan(first.position, 0)
        XCTAssertTrue(try db.deleteOutbox(opId: "a"))
        XCTAssertFalse(try db.deleteOutbox(opId: "a"), "nothing left to delete")
        XCTAssertEqual(try db.outboxEntries().map(\.opId), ["b"])
    }

    /// A slave commit records its change-feed events, and a commit with none records none.
    func testASlaveCommitRecordsItsFeedEventsOnly() throws {
        let db = try openDatabase()
        let store = SQLiteSlaveStore(db: db)
        let order = makeOrder()
        var quiet = SlaveCommit()
        quiet.lastSeq = 1
        try store.commit(quiet)
        XCTAssertEqual(try db.feed(after: 0, limit: 10).count, 0)
        var c = SlaveCommit()
        c.changes = [.insert(order)]
        c.feed = [.applied(operation: .create, orders: [order], masterSeq: 2, opId: nil, origin: "t2")]
        try store.commit(c)
        XCTAssertEqual(try db.feed(after: 0, limit: 10).count, 1)
    }

    /// A group whose COMMIT fails with the transaction still open (a deferred foreign key
    /// violation: SQLite keeps the transaction then) is rolled back: nothing of it stays, not
    /// even on the owner's connection, and the next group commits.
    func testAGroupCommitThatFailsWithItsTransactionOpenIsRolledBack() throws {
        let db = try openDatabase()
        try db.beginGroup()
        try db.connection.execute("PRAGMA defer_foreign_keys = ON")
        try db.transaction { try db.insertOrder(makeOrder(customer: "lost")) }
        try db.connection.execute("INSERT INTO journal_orders (uuid_key, seq) VALUES ('x', 99)")
        let commit = try db.detachGroupCommit()
        commit.run()
        XCTAssertEqual(commit.error?.kind, .constraint, "\(String(describing: commit.error))")
        db.finishGroupCommit(commit)
        XCTAssertEqual(try db.orderCount(), 0)
        try db.beginGroup()
        try db.transaction { try db.insertOrder(makeOrder(customer: "next")) }
        try db.commitGroup()
        XCTAssertEqual(try OrderDatabase(path: dbPath).allOrders().map(\.customerName), ["next"])
    }

    /// `isInGroup` holds between `beginGroup()` and the group's end only: not in an ordinary
    /// transaction, also not after a group that was rolled back.
    func testAnOrdinaryTransactionIsNotAGroupEvenAfterARolledBackOne() throws {
        let db = try openDatabase()
        try db.transaction { XCTAssertFalse(db.isInGroup) }
        try db.beginGroup()
        XCTAssertTrue(db.isInGroup)
        db.rollbackGroup()
        XCTAssertFalse(db.isInGroup)
        try db.transaction { XCTAssertFalse(db.isInGroup, "an ordinary transaction after the rolled-back group") }
        try db.beginGroup()
        try db.commitGroup()
        try db.transaction { XCTAssertFalse(db.isInGroup, "an ordinary transaction after a committed group") }
    }

    /// In a group, a transaction whose nested transaction fails (as `appendJournal` inside an
    /// engine commit does on a repeated operation id) undoes all of its own changes, not only
    /// the nested one's: the failed savepoint leaves the stack, so the outer one rolls back to
    /// its own start.
    func testAFailedTransactionInsideAGroupUndoesAllItsChangesPastAFailedNestedOne() throws {
        let db = try openDatabase()
        let kept = makeOrder(customer: "kept")
        try db.beginGroup()
        try db.transaction { try db.insertOrder(kept) }
        XCTAssertThrowsError(
            try db.transaction {
                try db.insertOrder(makeOrder(customer: "lost"))
                try db.transaction { try db.insertOrder(kept) }
            })
        try db.commitGroup()
        XCTAssertEqual(try OrderDatabase(path: dbPath).allOrders().map(\.customerName), ["kept"])
    }
}
