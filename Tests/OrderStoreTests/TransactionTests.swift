import Foundation
import SyncCore
import XCTest

@testable import OrderStore

final class TransactionTests: StoreTestCase {
    func testACommittedTransactionKeepsEverything() throws {
        let db = try openDatabase()
        let orders = [makeOrder(), makeOrder()]
        let count = try db.transaction { () -> Int in
            XCTAssertTrue(db.isInTransaction)
            for order in orders { try db.insertOrder(order) }
            try db.setMetadata("k", "v")
            return try db.orderCount()
        }
        XCTAssertEqual(count, 2)
        XCTAssertFalse(db.isInTransaction)
        XCTAssertEqual(try db.orderCount(), 2)
        XCTAssertEqual(try db.metadata("k"), "v")
    }

    func testRollbackOnThrowLeavesNothing() throws {
        let db = try openDatabase()
        let kept = makeOrder(customer: "kept")
        try db.insertOrder(kept)
        let journal = JournalEntry(
            seq: 1, opId: "op-1", origin: "local", operation: .create,
            orderUUIDs: ["x"], message: Array("{}".utf8), recordedAtMillis: 1)
        XCTAssertThrowsError(
            try db.transaction {
                try db.insertOrder(makeOrder(customer: "lost"))
                try db.deleteOrder(uuid: kept.uuid)
                try db.setMetadata("lost", "yes")
                try db.appendJournal(journal)
                XCTAssertEqual(try db.orderCount(), 1, "inside, the changes are visible")
                throw TestAbort()
            }
        ) { error in
            XCTAssertTrue(error is TestAbort, "the body's own error is rethrown")
        }
        XCTAssertFalse(db.isInTransaction)
        XCTAssertEqual(try db.allOrders(), [kept])
        XCTAssertNil(try db.metadata("lost"))
        XCTAssertEqual(try db.lastJournalSeq(), 0)
        XCTAssertNil(try db.journalEntry(opId: "op-1"))

        // A store error inside the body rolls back the same way.
        let other = makeOrder(customer: "other")
        assertStoreError(.duplicate) {
            try db.transaction {
                try db.insertOrder(other)
                try db.insertOrder(kept)
            }
        }
        XCTAssertEqual(try db.allOrders(), [kept])

        // And the connection is usable afterwards.
        try db.transaction { try db.insertOrder(other) }
        XCTAssertEqual(try db.orderCount(), 2)
    }

    func testANestedTransactionIsASavepoint() throws {
        let db = try openDatabase()
        let outer = makeOrder(customer: "outer")
        let inner = makeOrder(customer: "inner")
        try db.transaction {
            try db.insertOrder(outer)
            XCTAssertThrowsError(
                try db.transaction {
                    try db.insertOrder(inner)
                    throw TestAbort()
                })
            XCTAssertNil(try db.order(uuid: inner.uuid), "the inner changes are undone")
            XCTAssertNotNil(try db.order(uuid: outer.uuid), "the outer ones are kept")
            try db.transaction { try db.setMetadata("nested", "committed with the outer") }
        }
        XCTAssertEqual(try db.allOrders(), [outer])
        XCTAssertEqual(try db.metadata("nested"), "committed with the outer")

        // A throw in the outer body undoes the released savepoint too.
        XCTAssertThrowsError(
            try db.transaction {
                try db.transaction { try db.insertOrder(inner) }
                throw TestAbort()
            })
        XCTAssertEqual(try db.allOrders(), [outer])
    }

    func testChangesAreInvisibleToAnotherConnectionUntilCommit() throws {
        let writer = try openDatabase()
        let reader = try OrderDatabase.openReadOnly(path: dbPath)
        let order = makeOrder()
        try writer.transaction {
            try writer.insertOrder(order)
            XCTAssertEqual(try reader.orderCount(), 0, "uncommitted")
        }
        XCTAssertEqual(try reader.order(uuid: order.uuid), order)
    }

    func testASecondWriterWaitsForTheBusyTimeoutThenFailsAsBusy() throws {
        let first = try openDatabase()
        let second = try openDatabase()
        try second.connection.setBusyTimeout(.milliseconds(50))
        try first.transaction {
            try first.insertOrder(makeOrder())
            let error = assertStoreError(.busy) { try second.transaction { try second.insertOrder(makeOrder()) } }
            XCTAssertEqual(error?.primaryCode, 5, "SQLITE_BUSY")
        }
        XCTAssertEqual(try second.orderCount(), 1)
        try second.transaction { try second.insertOrder(makeOrder()) }
        XCTAssertEqual(try first.orderCount(), 2)
    }
}
