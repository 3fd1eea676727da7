import Foundation
import SyncCore
import XCTest

@testable import OrderStore

/// A store of an older schema version is copied to `backups/` before it is migrated (the way
/// back after an upgrade); a replica restored from a backup gets a new epoch.
final class MigrationBackupTests: StoreTestCase {
    /// The schema of the last release (12): the store an upgrade finds. This build adds 13
    /// (terms), 14 (member numbers) and 15 (operation ids below a snapshot).
    private let previousVersion: Int64 = 12

    /// A store at `previousVersion`, made by the migrations up to it, with `count` orders and
    /// their journal entries (as the previous build wrote them: no `term` column yet).
    private func makePreviousVersionStore(orders count: Int) throws -> [String] {
        let connection = try SQLiteConnection(path: dbPath, readOnly: false)
        defer { connection.close() }
        try connection.executeOnce("PRAGMA journal_mode = WAL")
        XCTAssertEqual(try Schema.migrate(connection, upTo: previousVersion).last, previousVersion)
        var uuids: [String] = []
        for i in 0..<count {
            let uuid = UUID().uuidString.lowercased()
            uuids.append(uuid)
            _ = try connection.execute(
                "INSERT INTO journal (seq, op_id, origin, operation, order_uuids, message, recorded_at_ms) VALUES (?, ?, 'test', 0, ?, '{}', 0)",
                [.integer(Int64(i + 1)), .text("op-\(i)"), .text("[\"\(uuid)\"]")])
        }
        return uuids
    }

    private func backups() throws -> [String] {
        let folder = OrderDatabase.migrationBackupFolder(of: dbPath)
        guard FileManager.default.fileExists(atPath: folder) else { return [] }
        return try FileManager.default.contentsOfDirectory(atPath: folder).sorted()
    }

    func testAStoreOfThePreviousVersionIsCopiedBeforeItIsMigrated() throws {
        let uuids = try makePreviousVersionStore(orders: 5)
        let db = try OrderDatabase(path: dbPath, now: 1_795_000_000)
        defer { db.close() }
        XCTAssertEqual(db.migrationsApplied, Array((previousVersion + 1)...Schema.currentVersion))
        let copy = try XCTUnwrap(db.migrationBackup)
        XCTAssertEqual(copy.fromVersion, previousVersion)
        XCTAssertEqual(copy.toVersion, Schema.currentVersion)
        XCTAssertEqual(copy.path, OrderDatabase.migrationBackupFolder(of: dbPath) + "/store-v\(previousVersion)-20261118T110640Z.db")
        XCTAssertEqual(try backups(), ["store-v\(previousVersion)-20261118T110640Z.db"], "one file, no -wal, no temporary")
        var info = stat()
        XCTAssertEqual(stat(copy.path, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
        XCTAssertEqual(stat(OrderDatabase.migrationBackupFolder(of: dbPath), &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o700)

        // The copy is the store as the previous build left it: its version, its entries, and
        // not the new column.
        let old = try SQLiteConnection(path: copy.path, readOnly: true)
        defer { old.close() }
        XCTAssertEqual(try Schema.version(of: old), previousVersion)
        XCTAssertEqual(try old.scalarInt("SELECT count(*) FROM journal"), 5)
        XCTAssertEqual(try old.scalarText("PRAGMA journal_mode"), "delete")
        XCTAssertEqual(try old.scalarInt("SELECT count(*) FROM pragma_table_info('journal') WHERE name = 'term'"), 0)
        // The migrated store has them all, of term 1.
        XCTAssertEqual(try db.lastJournalSeq(), 5)
        XCTAssertEqual(try db.connection.scalarInt("SELECT count(*) FROM journal WHERE term = 1"), 5)
        XCTAssertEqual(try db.connection.scalarText("SELECT order_uuids FROM journal WHERE seq = 5"), "[\"\(uuids[4])\"]")
    }

    func testAStoreThatCannotBeCopiedIsNotMigrated() throws {
        _ = try makePreviousVersionStore(orders: 2)
        // `backups` is a file: no copy can be made in it.
        FileManager.default.createFile(atPath: OrderDatabase.migrationBackupFolder(of: dbPath), contents: Data("x".utf8))
        do {
            _ = try OrderDatabase(path: dbPath)
            XCTFail("a store that could not be copied was opened")
        } catch let error as StoreError {
            XCTAssertTrue(error.message.contains("no copy of the store before migrating it from schema \(previousVersion)"), error.message)
            XCTAssertTrue(error.message.contains("nothing was migrated"), error.message)
        }
        let untouched = try SQLiteConnection(path: dbPath, readOnly: true)
        defer { untouched.close() }
        XCTAssertEqual(try Schema.version(of: untouched), previousVersion)
        XCTAssertEqual(try untouched.scalarInt("SELECT count(*) FROM pragma_table_info('journal') WHERE name = 'term'"), 0)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.contains(".tmp-") }
        XCTAssertEqual(leftovers, [])
    }

    func testACurrentOrNewStoreIsNotCopied() throws {
        let fresh = try openDatabase()
        XCTAssertNil(fresh.migrationBackup, "a new file has nothing to keep")
        fresh.close()
        let again = try openDatabase()
        XCTAssertNil(again.migrationBackup, "a current file is not migrated")
        again.close()
        XCTAssertEqual(try backups(), [])
    }

    func testOnlyTheNewestCopiesAreKept() throws {
        let folder = OrderDatabase.migrationBackupFolder(of: dbPath)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        for stamp in ["20250101T000000Z", "20260101T000000Z", "20240101T000000Z", "20260601T000000Z"] {
            FileManager.default.createFile(atPath: folder + "/store-v11-\(stamp).db", contents: Data())
        }
        FileManager.default.createFile(atPath: folder + "/notes.txt", contents: Data())
        _ = try makePreviousVersionStore(orders: 1)
        let db = try OrderDatabase(path: dbPath, now: 1_795_000_000)
        db.close()
        XCTAssertEqual(
            try backups(),
            [
                "notes.txt", "store-v11-20260101T000000Z.db", "store-v11-20260601T000000Z.db",
                "store-v\(previousVersion)-20261118T110640Z.db",
            ])
        XCTAssertEqual(db.migrationBackup?.removed, [folder + "/store-v11-20240101T000000Z.db", folder + "/store-v11-20250101T000000Z.db"])
    }

    /// Every table's columns (name, type, not null, default, primary key) and every index, in
    /// order: the layout a build reads.
    private func layout(_ connection: SQLiteConnection) throws -> [String] {
        func firstColumn(_ sql: String) throws -> [String] {
            try connection.withStatement(sql) { statement in
                var values: [String] = []
                while try statement.step() { values.append(statement.text(0)) }
                return values
            }
        }
        let tables = try firstColumn("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
        var out = try firstColumn("SELECT name || ' ON ' || tbl_name FROM sqlite_schema WHERE type = 'index' ORDER BY name")
        for table in tables {
            out += try connection.withStatement(
                "SELECT name, type, \"notnull\", coalesce(dflt_value, ''), pk FROM pragma_table_info(?)", [.text(table)]
            ) { statement in
                var columns: [String] = []
                while try statement.step() {
                    columns.append((0..<5).map { statement.optionalText(Int32($0)) ?? "" }.joined(separator: " "))
                }
                return columns.map { "\(table): \($0)" }
            }
        }
        return out
    }

    /// `Tests/lan/test_upgrade.py` makes its store of the previous version by taking a current
    /// one back (`previous_schema`: migration 15's table, migration 14's column and index and
    /// migration 13's two columns dropped, `user_version` 12): that gives exactly the layout the migrations up to
    /// 12 make.
    func testTheUpgradeTestsWayBackGivesThePreviousLayout() throws {
        let previous = try SQLiteConnection(path: directory + "/previous.sqlite", readOnly: false)
        defer { previous.close() }
        try Schema.migrate(previous, upTo: previousVersion)
        let current = try SQLiteConnection(path: directory + "/current.sqlite", readOnly: false)
        defer { current.close() }
        try Schema.migrate(current)
        XCTAssertNotEqual(try layout(current), try layout(previous))
        for statement in [
            "DROP TABLE applied_op_ids", "DROP INDEX paired_terminals_by_number", "ALTER TABLE paired_terminals DROP COLUMN number",
            "ALTER TABLE journal DROP COLUMN term", "ALTER TABLE paired_terminals DROP COLUMN voter",
            "PRAGMA user_version = \(previousVersion)",
        ] {
            try current.executeOnce(statement)
        }
        XCTAssertEqual(try layout(current), try layout(previous))
        XCTAssertEqual(try Schema.version(of: current), previousVersion)
    }

    func testAReplicaRestoredFromABackupGetsANewEpoch() throws {
        let db = try openDatabase()
        try db.setMetadata("node.role", "slave")
        let epoch = try db.databaseEpoch()
        db.close()
        let file = directory + "/replica-backup.sqlite"
        _ = try OrderDatabase.backup(from: dbPath, to: file, overwrite: false, madeMillis: 1)
        let restored = try OrderDatabase(path: file)
        defer { restored.close() }
        let adopted = try XCTUnwrap(try restored.adoptRestoredBackup())
        XCTAssertNotEqual(adopted.newEpoch, epoch)
        XCTAssertEqual(try restored.databaseEpoch(), adopted.newEpoch)
        XCTAssertNil(adopted.term, "a replica does not start a term")
        XCTAssertNil(adopted.madeByNodeId, "no node id was given")
        XCTAssertEqual(try restored.term(), 1)
    }
}
