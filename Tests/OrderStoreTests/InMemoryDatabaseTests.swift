import XCTest

@testable import OrderStore

/// `OrderDatabase.inMemory()`: the full schema in a `:memory:` database, whose journal mode is
/// "memory" rather than WAL, with transactions that commit and roll back as on disk.
final class InMemoryDatabaseTests: XCTestCase {
    func testInMemoryDatabaseHasTheSchemaAndRollsBack() throws {
        let db = try OrderDatabase.inMemory()
        XCTAssertEqual(db.path, ":memory:")
        XCTAssertEqual(try db.schemaVersionOnDisk(), OrderDatabase.schemaVersion)
        XCTAssertFalse(try db.databaseEpoch().isEmpty)
        XCTAssertEqual(try db.connection.scalarText("PRAGMA journal_mode")?.lowercased(), "memory")

        try db.transaction { try db.setMetadata("kept", "1") }
        struct Abort: Error {}
        XCTAssertThrowsError(
            try db.transaction {
                try db.setMetadata("rolled.back", "1")
                throw Abort()
            })
        XCTAssertEqual(try db.metadata("kept"), "1")
        XCTAssertNil(try db.metadata("rolled.back"))
        XCTAssertFalse(db.isInTransaction)

        // Each one is a database of its own.
        let other = try OrderDatabase.inMemory()
        XCTAssertNil(try other.metadata("kept"))
        XCTAssertNotEqual(try other.databaseEpoch(), try db.databaseEpoch())
    }

    func testAFileDatabaseStillRequiresWAL() throws {
        let path = NSTemporaryDirectory() + "/orderstore-wal-\(getpid())-\(UUID().uuidString).sqlite"
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
        let db = try OrderDatabase(path: path)
        XCTAssertEqual(try db.connection.scalarText("PRAGMA journal_mode")?.lowercased(), "wal")
    }
}
