import Dispatch
import Foundation
import SyncCore
import XCTest

@testable import OrderStore

/// Group commit: many transactions inside one, committed once on another thread.
final class GroupCommitTests: StoreTestCase {
    func testAGroupCommitsEveryNestedTransactionOnceOnAnotherThread() throws {
        let db = try openDatabase()
        let other = try OrderDatabase(path: dbPath)
        let orders = (0..<50).map { makeOrder(customer: "c\($0)") }
        try db.beginGroup()
        XCTAssertTrue(db.isInGroup)
        for order in orders { try db.transaction { try db.insertOrder(order) } }
        // A nested transaction that fails undoes only its own changes.
        XCTAssertThrowsError(try db.transaction { try db.insertOrder(orders[0]) })
        XCTAssertEqual(try other.orderCount(), 0, "nothing is visible before the group's commit")
        let commit = try db.detachGroupCommit()
        XCTAssertFalse(db.isInGroup)
        XCTAssertTrue(db.isCommitting)
        XCTAssertNil(commit.result, "nothing ran yet")
        let finished = expectation(description: "committed on the commit thread")
        DispatchQueue(label: "test.commit").async {
            commit.run()
            finished.fulfill()
        }
        // Nothing waits for the COMMIT: the owner takes the connection back once it ran.
        wait(for: [finished], timeout: 10)
        XCTAssertNil(commit.error)
        guard case .success = db.finishGroupCommit(commit) else { return XCTFail("the group did not commit") }
        XCTAssertFalse(db.isCommitting)
        XCTAssertEqual(try db.orderCount(), 50)
        XCTAssertEqual(try other.orderCount(), 50, "another connection sees the whole group")
        // The connection is usable for ordinary transactions afterwards.
        try db.transaction { try db.insertOrder(makeOrder(customer: "after")) }
        XCTAssertEqual(try other.orderCount(), 51)
    }

    func testAFailedGroupCommitLeavesNothingOfTheGroup() throws {
        let db = try openDatabase()
        try db.insertOrder(makeOrder(customer: "kept"))
        try db.beginGroup()
        try db.transaction { try db.insertOrder(makeOrder(customer: "lost")) }
        // The COMMIT fails: the transaction is rolled back underneath, as SQLite does after
        // SQLITE_FULL.
        try db.connection.execute("ROLLBACK")
        let commit = try db.detachGroupCommit()
        commit.run()
        XCTAssertNotNil(commit.error, "a COMMIT without a transaction fails")
        guard case .failure = db.finishGroupCommit(commit) else { return XCTFail("the COMMIT did not fail") }
        XCTAssertEqual(try db.allOrders().map(\.customerName), ["kept"])
        // And the next group works.
        try db.beginGroup()
        try db.transaction { try db.insertOrder(makeOrder(customer: "next")) }
        try db.commitGroup()
        XCTAssertEqual(try OrderDatabase(path: dbPath).orderCount(), 2)
    }

    func testARolledBackGroupKeepsNothing() throws {
        let db = try openDatabase()
        try db.beginGroup()
        try db.transaction { try db.insertOrder(makeOrder(customer: "lost")) }
        db.rollbackGroup()
        XCTAssertFalse(db.isInGroup)
        XCTAssertEqual(try db.orderCount(), 0)
    }
}
