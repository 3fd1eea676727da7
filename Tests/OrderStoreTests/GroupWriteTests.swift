import Foundation
import SyncCore
import XCTest

@testable import OrderStore

/// The master's operations inside a group commit write straight into the group's transaction
/// (`OrderDatabase.groupWrite`, no savepoint each): one that fails part-way fails its whole
/// group, and nothing of the group reaches the disk.
final class GroupWriteTests: StoreTestCase {
    private func entry(_ seq: Int64, _ order: Order) -> JournalEntry {
        JournalEntry(
            seq: seq, opId: nil, origin: "10.0.0.1:5000", operation: .create, orderUUIDs: [order.uuid],
            message: Array("{\"seq\":\(seq)}".utf8), recordedAtMillis: 1)
    }

    /// An operation whose journal entry is refused after its order's row was written (the seq
    /// is taken) leaves the group failed: the operations before it, its own row and those
    /// after it are all rolled back, its COMMIT reports the failure, and the next group
    /// commits from what was on disk.
    func testAnOperationFailingPartWayFailsItsGroupAndNothingOfItStays() throws {
        let db = try openDatabase()
        let store = SQLiteMasterStore(db: db)
        let (a, b, c) = (makeOrder(customer: "a"), makeOrder(customer: "b"), makeOrder(customer: "c"))
        try db.beginGroup()
        try store.commit([.insert(a)], entry: entry(1, a))
        XCTAssertThrowsError(try store.commit([.insert(b)], entry: entry(1, b))) { error in
            XCTAssertEqual((error as? StoreError)?.kind, .duplicate, "\(error)")
        }
        XCTAssertTrue(db.groupHasFailed)
        XCTAssertEqual(try db.orderCount(), 0, "the group was rolled back at once")
        XCTAssertThrowsError(try store.commit([.insert(c)], entry: entry(2, c)), "the rest of the group fails too")
        XCTAssertTrue(db.isInGroup)
        XCTAssertFalse(db.connection.isAutocommit, "later writes of the group still run inside a transaction")
        let commit = try db.detachGroupCommit()
        commit.run()
        XCTAssertEqual(commit.error?.kind, .duplicate, "\(String(describing: commit.error))")
        db.finishGroupCommit(commit)
        XCTAssertFalse(db.groupHasFailed)
        let reopened = try OrderDatabase(path: dbPath)
        XCTAssertEqual(try reopened.orderCount(), 0)
        XCTAssertEqual(try reopened.lastJournalSeq(), 0)
        try db.beginGroup()
        try store.commit([.insert(c)], entry: entry(1, c))
        try db.commitGroup()
        XCTAssertEqual(try OrderDatabase(path: dbPath).allOrders().map(\.customerName), ["c"])
    }

    /// Outside a group an operation is its own transaction: a failure undoes its writes only.
    func testOutsideAGroupAFailedOperationUndoesItsOwnWritesOnly() throws {
        let db = try openDatabase()
        let store = SQLiteMasterStore(db: db)
        let (a, b) = (makeOrder(customer: "a"), makeOrder(customer: "b"))
        try store.commit([.insert(a)], entry: entry(1, a))
        XCTAssertThrowsError(try store.commit([.insert(b)], entry: entry(1, b)))
        XCTAssertEqual(try OrderDatabase(path: dbPath).allOrders().map(\.customerName), ["a"])
        XCTAssertEqual(try db.journal(since: 0, orderUUID: nil, limit: 10).map(\.seq), [1])
    }

    /// A group SQLite rolled back by itself (as after SQLITE_FULL) takes no more writes: none
    /// runs outside a transaction, where it would commit alone.
    func testAGroupSQLiteRolledBackTakesNoMoreWrites() throws {
        let db = try openDatabase()
        let store = SQLiteMasterStore(db: db)
        let a = makeOrder(customer: "a")
        try db.beginGroup()
        try db.connection.execute("ROLLBACK")
        XCTAssertThrowsError(try store.commit([.insert(a)], entry: entry(1, a)))
        let commit = try db.detachGroupCommit()
        commit.run()
        XCTAssertNotNil(commit.error)
        db.finishGroupCommit(commit)
        XCTAssertEqual(try OrderDatabase(path: dbPath).orderCount(), 0)
    }

    /// SQLite keeps no memory statistics (so that none of its allocations takes a global
    /// mutex): it counts nothing in use after a write. The setting is SQLITE_OK when it came
    /// before SQLite initialized; SQLITE_MISUSE when a test's fault VFS initialized SQLite
    /// first in this process (it turns the statistics off itself), which depends on the order
    /// the tests run in, so the count in use is what is checked either way.
    func testSQLiteKeepsNoMemoryStatistics() throws {
        let db = try openDatabase()
        try db.insertOrder(makeOrder())
        XCTAssertTrue([0, 21].contains(SQLiteConnection.configured), "SQLITE_OK or SQLITE_MISUSE, not \(SQLiteConnection.configured)")
        XCTAssertEqual(SQLiteConnection.memoryUsed, 0)
    }
}
