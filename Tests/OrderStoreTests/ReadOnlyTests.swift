import Foundation
import SyncCore
import XCTest

@testable import OrderStore

final class ReadOnlyTests: StoreTestCase {
    func testAMissingFileIsAClearErrorAndIsNotCreated() throws {
        let error = assertStoreError(.missingDatabase) { try OrderDatabase.openReadOnly(path: dbPath) }
        XCTAssertTrue(error?.message.contains(dbPath) ?? false, error?.message ?? "")
        XCTAssertFalse(FileManager.default.fileExists(atPath: dbPath))
    }

    func testSeesWhatTheWriterCommittedWhileTheWriterIsOpen() throws {
        let writer = try openDatabase()
        let first = makeOrder(customer: "first", createdMillis: 1_000)
        try writer.insertOrder(first)
        try writer.setMetadata("store.id", "s1")
        try writer.appendJournal(
            JournalEntry(
                seq: 1, opId: "op", origin: "local", operation: .create,
                orderUUIDs: [first.uuid], message: Array("{}".utf8), recordedAtMillis: 5))

        let reader = try OrderDatabase.openReadOnly(path: dbPath)
        XCTAssertTrue(reader.isReadOnly)
        XCTAssertFalse(writer.isReadOnly)
        XCTAssertEqual(try reader.allOrders(), [first])
        XCTAssertEqual(try reader.metadata("store.id"), "s1")
        XCTAssertEqual(try reader.lastJournalSeq(), 1)
        XCTAssertEqual(try reader.databaseEpoch(), try writer.databaseEpoch())

        // Later commits are seen by the next query of the same read-only connection.
        let second = makeOrder(customer: "second", createdMillis: 2_000)
        try writer.insertOrder(second)
        let page = try reader.orders(page: 1, per: 10)
        XCTAssertEqual(page.total, 2)
        XCTAssertEqual(page.orders, [first, second])
    }

    func testRefusesEveryWrite() throws {
        let order = makeOrder()
        do {
            let writer = try openDatabase()
            try writer.insertOrder(order)
            writer.close()
        }
        let reader = try OrderDatabase.openReadOnly(path: dbPath)
        var changed = order
        changed.customerName = "changed"
        assertStoreError(.readOnly) { try reader.insertOrder(makeOrder()) }
        assertStoreError(.readOnly) { try reader.updateOrder(changed) }
        assertStoreError(.readOnly) { try reader.upsertOrder(changed) }
        assertStoreError(.readOnly) { try reader.deleteOrder(uuid: order.uuid) }
        assertStoreError(.readOnly) { try reader.replaceAllOrders(with: []) }
        assertStoreError(.readOnly) { try reader.setMetadata("k", "v") }
        assertStoreError(.readOnly) { try reader.removeMetadata("k") }
        assertStoreError(.readOnly) { try reader.transaction {} }
        assertStoreError(.readOnly) { try reader.deleteJournal(through: 10) }
        assertStoreError(.readOnly) {
            try reader.appendJournal(
                JournalEntry(
                    seq: 1, opId: nil, origin: "x", operation: .remove,
                    orderUUIDs: [], message: Array("{}".utf8), recordedAtMillis: 0))
        }
        // SQLite itself refuses too: the connection was opened with SQLITE_OPEN_READONLY.
        let raw = assertStoreError(.readOnly) { try reader.connection.execute("DELETE FROM orders") }
        XCTAssertEqual(raw?.primaryCode, 8, "SQLITE_READONLY")

        XCTAssertEqual(try reader.allOrders(), [order])
        reader.close()
        XCTAssertEqual(try OrderDatabase(path: dbPath).allOrders(), [order])
    }

    func testReadOnlyOpenRunsNoMigration() throws {
        do {
            let writer = try openDatabase()
            writer.close()
        }
        let reader = try OrderDatabase.openReadOnly(path: dbPath)
        XCTAssertEqual(reader.migrationsApplied, [])
        XCTAssertEqual(try reader.schemaVersionOnDisk(), OrderDatabase.schemaVersion)
    }
}
