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
        XCTAssertEqual(tables, ["journal", "journal_orders", "journal_orders_by_seq", "metadata", "orders",
                                "orders_by_created"])

        var orderColumns: [String] = []
        try db.connection.withStatement("SELECT name FROM pragma_table_info('orders') ORDER BY cid") { statement in
            while try statement.step() { orderColumns.append(statement.text(0)) }
        }
        XCTAssertEqual(orderColumns, ["uuid_key", "uuid", "customer_name", "created_text", "created_ms",
                                      "created_offset_min", "shipping_method", "table_name", "table_size",
                                      "extra_json", "version"])
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
        XCTAssertEqual(try db.connection.scalarInt("PRAGMA busy_timeout"),
                       Int64(OrderDatabase.busyTimeoutMilliseconds))
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

    func testAFileThatIsNotSQLiteIsAnErrorWithTheSQLiteCode() throws {
        _ = FileManager.default.createFile(atPath: dbPath, contents: Data(repeating: 0x41, count: 4096))
        let error = assertStoreError(.sqlite) { try openDatabase() }
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
