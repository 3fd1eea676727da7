import Foundation
import SyncCore
import XCTest

@testable import OrderStore

final class SchemaTests: StoreTestCase {
    func testMigrationsCreateTheSchemaAndSetUserVersion() throws {
        let db = try openDatabase()
        XCTAssertEqual(db.migrationsApplied, Array(1...OrderDatabase.schemaVersion))
        XCTAssertEqual(try db.schemaVersionOnDisk(), OrderDatabase.schemaVersion)
        XCTAssertGreaterThanOrEqual(OrderDatabase.schemaVersion, 1)

        var tables: [String] = []
        try db.connection.withStatement(
            "SELECT name FROM sqlite_schema WHERE type IN ('table', 'index') AND name NOT LIKE 'sqlite_%' ORDER BY name"
        ) { statement in
            while try statement.step() { tables.append(statement.text(0)) }
        }
        XCTAssertEqual(
            tables,
            [
                "answered_ops", "api_answers", "applied_op_ids", "applied_op_ids_by_seq",
                "feed", "journal", "journal_orders", "journal_orders_by_seq", "metadata", "orders",
                "orders_by_created", "orders_by_status", "outbox", "paired_terminals", "paired_terminals_by_name",
                "paired_terminals_by_number", "rejections",
                "rejections_by_op", "rejections_by_order", "storepos_foreign_orders",
                "sync_errors", "terminals", "tombstones",
            ])

        var orderColumns: [String] = []
        try db.connection.withStatement("SELECT name FROM pragma_table_info('orders') ORDER BY cid") { statement in
            while try statement.step() { orderColumns.append(statement.text(0)) }
        }
        XCTAssertEqual(
            orderColumns,
            [
                "uuid_key", "uuid", "customer_name", "created_text", "created_ms",
                "created_offset_min", "shipping_method", "table_name", "table_size",
                "extra_json", "version", "status", "items_json", "note",
            ])
    }

    func testTheDatabaseEpochIsAVersion4UUIDMadeOnce() throws {
        let db = try openDatabase()
        let epoch = try db.databaseEpoch()
        XCTAssertTrue(Order.isValidUUID(epoch), epoch)
        let chars = Array(epoch)
        XCTAssertEqual(chars[14], "4")
        XCTAssertTrue("89ab".contains(chars[19]), epoch)
        db.close()

        let again = try openDatabase()
        XCTAssertEqual(try again.databaseEpoch(), epoch, "reopening keeps the epoch")
        again.close()

        let otherPath = directory + "/other.sqlite"
        let other = try OrderDatabase(path: otherPath)
        XCTAssertNotEqual(try other.databaseEpoch(), epoch, "a new database gets a new epoch")
    }

    func testReopeningRunsNoMigrationAndKeepsData() throws {
        let order = makeOrder()
        do {
            let db = try openDatabase()
            try db.insertOrder(order)
            try db.setMetadata("store.id", "store-7")
            db.close()
        }
        let db = try openDatabase()
        XCTAssertEqual(db.migrationsApplied, [])
        XCTAssertEqual(try db.schemaVersionOnDisk(), OrderDatabase.schemaVersion)
        XCTAssertEqual(try db.order(uuid: order.uuid), order)
        XCTAssertEqual(try db.metadata("store.id"), "store-7")
    }

    func testWriterUsesWALAndSynchronousFull() throws {
        let db = try openDatabase()
        XCTAssertEqual(try db.connection.scalarText("PRAGMA journal_mode"), "wal")
        XCTAssertEqual(try db.connection.scalarInt("PRAGMA synchronous"), 2, "2 is FULL")
        XCTAssertEqual(
            try db.connection.scalarInt("PRAGMA busy_timeout").map { Duration.milliseconds($0) },
            OrderDatabase.busyTimeout)
        XCTAssertEqual(try db.connection.scalarInt("PRAGMA foreign_keys"), 1)
    }

    func testASchemaNewerThanThisBuildIsRefusedByBothOpenModes() throws {
        do {
            let db = try openDatabase()
            try db.connection.executeOnce("PRAGMA user_version = \(OrderDatabase.schemaVersion + 1)")
            db.close()
        }
        let rw = assertStoreError(.schemaTooNew) { try openDatabase() }
        XCTAssertTrue(rw?.message.contains("newer") ?? false, rw?.message ?? "")
        let ro = assertStoreError(.schemaTooNew) { try OrderDatabase.openReadOnly(path: dbPath) }
        XCTAssertTrue(ro?.description.contains(dbPath) ?? false)
    }

    func testAFileWithoutOurSchemaIsRefusedReadOnly() throws {
        _ = FileManager.default.createFile(atPath: dbPath, contents: Data())
        let error = assertStoreError(.schemaMismatch) { try OrderDatabase.openReadOnly(path: dbPath) }
        XCTAssertTrue(error?.message.contains("not an OrderSync database") ?? false, error?.message ?? "")
    }

    func testAFileThatIsNotSQLiteIsDamagedWithTheSQLiteCode() throws {
        _ = FileManager.default.createFile(atPath: dbPath, contents: Data(repeating: 0x41, count: 4096))
        let error = assertStoreError(.damaged) { try openDatabase() }
        // SQLITE_NOTADB is 26.
        XCTAssertEqual(error?.primaryCode, 26, error.map { "\($0)" } ?? "")
    }

    func testUseAfterCloseIsAClosedError() throws {
        let db = try openDatabase()
        db.close()
        db.close()
        assertStoreError(.closed) { try db.orderCount() }
        assertStoreError(.closed) { try db.insertOrder(makeOrder()) }
        assertStoreError(.closed) { try db.transaction {} }
    }
}

/// A file written by the first schema is brought up to date and keeps its orders.
final class SchemaUpgradeTests: StoreTestCase {
    func testAVersion1FileGainsStatusItemsAndNote() throws {
        let path = directory + "/v1.sqlite"
        let db = try OrderDatabase(path: path)
        try db.connection.executeOnce("DROP TABLE storepos_foreign_orders")
        try db.connection.executeOnce("DROP TABLE rejections")
        try db.connection.executeOnce("DROP TABLE outbox")
        try db.connection.executeOnce("DROP TABLE terminals")
        try db.connection.executeOnce("DROP TABLE tombstones")
        try db.connection.executeOnce("DROP TABLE sync_errors")
        try db.connection.executeOnce("DROP TABLE answered_ops")
        try db.connection.executeOnce("DROP TABLE paired_terminals")
        try db.connection.executeOnce("DROP INDEX orders_by_status")
        try db.connection.executeOnce("ALTER TABLE orders DROP COLUMN note")
        try db.connection.executeOnce("ALTER TABLE orders DROP COLUMN items_json")
        try db.connection.executeOnce("ALTER TABLE orders DROP COLUMN status")
        try db.connection.executeOnce("ALTER TABLE journal DROP COLUMN term")
        try db.connection.executeOnce(
            """
            INSERT INTO orders (uuid_key, uuid, customer_name, created_text, created_ms, created_offset_min, extra_json, version)
            VALUES ('9437c8f5-d742-46cb-9847-737c5809392c', '9437C8F5-D742-46CB-9847-737C5809392C', 'Kevin',
                    '2016-01-12T21:35:16+0800', 1452605716000, 480, '{}', 1)
            """)
        try db.connection.executeOnce("PRAGMA user_version = 1")
        db.close()
        let upgraded = try OrderDatabase(path: path)
        XCTAssertEqual(upgraded.migrationsApplied, Array(2...OrderDatabase.schemaVersion))
        let order = try XCTUnwrap(upgraded.order(uuid: "9437C8F5-D742-46CB-9847-737C5809392C"))
        XCTAssertEqual(order.status, .open)
        XCTAssertNil(order.items)
        XCTAssertEqual(order.customerName, "Kevin")
    }

    func testStatusItemsAndNoteRoundTripAndFilterPages() throws {
        let db = try openDatabase()
        let items = [LineItem(sku: "LAT", name: "Latte", quantity: 2, unitPrice: 350), LineItem(name: "Cake", quantity: 1, unitPrice: 420)]
        for (i, status) in [OrderStatus.open, .inProgress, .completed, .inProgress].enumerated() {
            try db.insertOrder(
                Order(
                    uuid: UUID().uuidString, customerName: "c\(i)", created: OrderTimestamp(epochMillis: Int64(i) * 1000),
                    status: status, items: i == 0 ? items : nil, note: i == 1 ? "no nuts" : nil))
        }
        let all = try db.allOrders()
        XCTAssertEqual(all[0].items, items)
        XCTAssertEqual(all[1].note, "no nuts")
        let busy = try db.orders(page: 1, per: 10, status: .inProgress)
        XCTAssertEqual(busy.total, 2)
        XCTAssertEqual(busy.orders.map(\.customerName), ["c1", "c3"])
        XCTAssertEqual(try db.orders(page: 2, per: 1, status: .inProgress).orders.map(\.customerName), ["c3"])
        XCTAssertEqual(try db.orders(page: 1, per: 10, status: .cancelled).total, 0)
    }
}

final class RejectionTests: StoreTestCase {
    func testRejectionsAreKeptAndListedOldestFirst() throws {
        let db = try openDatabase()
        let u = UUID().uuidString
        let a = try db.appendRejection(
            Rejection(
                recordedAtMillis: 1, origin: "bar@10.0.0.2:5000", opId: "op1", operation: .update,
                orderUUID: u, code: .notFound, message: "no order with this uuid to update"))
        try db.appendRejection(
            Rejection(
                recordedAtMillis: 2, origin: "10.0.0.9:6000", opId: nil, operation: nil,
                orderUUID: nil, code: .malformedJSON, message: "message is not valid JSON"))
        XCTAssertGreaterThan(a.id, 0)
        let all = try db.rejections(since: 0, orderUUID: nil, limit: 10)
        XCTAssertEqual(all.map(\.code), [.notFound, .malformedJSON])
        XCTAssertEqual(all[0].operation, .update)
        XCTAssertEqual(all[0].opId, "op1")
        XCTAssertEqual(try db.rejections(since: 0, orderUUID: u.lowercased(), limit: 10).map(\.id), [a.id])
        XCTAssertEqual(try db.rejections(since: a.id, orderUUID: nil, limit: 10).count, 1)
    }
}
