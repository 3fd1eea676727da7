import Foundation
import SyncCore
import WireTestSupport
import XCTest

@testable import OrderStore

/// A damaged file is refused by both open modes and left as it was; a slave's outbox is read
/// back from a damaged replica; `backup` makes a checked copy that a master opening it adopts in
/// a new term of the same epoch.
final class IntegrityTests: StoreTestCase {
    /// A database with `count` orders and a journal entry for each, closed (its WAL
    /// checkpointed into the file).
    private func makeStore(orders count: Int, role: String = "master") throws -> [Order] {
        let db = try openDatabase()
        let orders = (0..<count).map { makeOrder(customer: "customer \($0)") }
        try db.transaction {
            try db.setMetadata("node.role", role)
            for (i, order) in orders.enumerated() {
                try db.insertOrder(order)
                try db.appendJournal(
                    JournalEntry(
                        seq: Int64(i + 1), opId: "op-\(i)", origin: "test", operation: .create, orderUUIDs: [order.uuid],
                        message: Array("{}".utf8), recordedAtMillis: 1_700_000_000_000))
            }
        }
        db.close()
        return orders
    }

    /// Overwrites the root page of `table` with garbage, as a failing disk or a stray write
    /// would; the file must be closed (no WAL).
    private var rootPage: Int64?

    private func overwriteRootPage(of table: String, path: String? = nil) throws {
        let file = path ?? dbPath
        let (root, pageSize): (Int64, Int64)
        do {
            let db = try OrderDatabase.openReadOnly(path: file)
            root = try XCTUnwrap(db.connection.scalarInt("SELECT rootpage FROM sqlite_schema WHERE name = ?", [.text(table)]))
            pageSize = try XCTUnwrap(db.connection.scalarInt("PRAGMA page_size"))
            rootPage = root
            db.close()
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: file + "-wal") && fileSize(file + "-wal") > 0)
        let handle = try XCTUnwrap(FileHandle(forUpdatingAtPath: file))
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64((root - 1) * pageSize))
        let garbage = (0..<Int(pageSize)).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        try handle.write(contentsOf: Data(garbage))
        try handle.synchronize()
    }

    private func fileSize(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? -1
    }

    func testASoundFilePassesQuickCheck() throws {
        _ = try makeStore(orders: 20)
        let db = try openDatabase()
        XCTAssertEqual(try db.quickCheck(), [])
        XCTAssertEqual(try db.orderCount(), 20)
    }

    func testAFileWithItsOrdersPagesOverwrittenIsRefusedByBothOpenModesAndLeftAsItWas() throws {
        _ = try makeStore(orders: 20)
        try overwriteRootPage(of: "orders")
        let before = try Data(contentsOf: URL(fileURLWithPath: dbPath))
        let rw = assertStoreError(.damaged) { try openDatabase() }
        let root = try XCTUnwrap(rootPage)
        XCTAssertEqual(rw?.problems.first, "Page \(root): btreeInitPage() returns error code 11", "quick_check's lines are kept")
        XCTAssertTrue(rw?.description.contains(dbPath) ?? false, rw?.description ?? "")
        let ro = assertStoreError(.damaged) { try OrderDatabase.openReadOnly(path: dbPath) }
        XCTAssertEqual(ro?.problems, rw?.problems)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: dbPath)), before, "a refused file is not written to")
    }

    func testTheOutboxAndIdentityOfADamagedReplicaAreReadBackIntoAFreshOne() throws {
        _ = try makeStore(orders: 30, role: "slave")
        let entries = (0..<3).map {
            OutboxEntry(
                opId: "queued-\($0)", message: Array("{\"n\":\($0)}".utf8), orderKeys: ["k\($0)"], createdMillis: 5 + Int64($0), baseSeq: 7)
        }
        do {
            let db = try openDatabase()
            try db.setMetadata("terminal.id", "terminal-1")
            try db.setMetadata("replica.store", "shop1")
            for e in entries { try db.appendOutbox(e) }
            db.close()
        }
        try overwriteRootPage(of: "orders")
        assertStoreError(.damaged) { try openDatabase() }

        let salvaged = OrderDatabase.salvageReplica(path: dbPath)
        XCTAssertNil(salvaged.outboxError)
        XCTAssertEqual(salvaged.outbox?.map(\.opId), entries.map(\.opId))
        XCTAssertEqual(salvaged.metadata, ["node.role": "slave", "terminal.id": "terminal-1", "replica.store": "shop1"])

        let moved = try OrderDatabase.moveAside(dbPath, suffix: ".damaged-test")
        XCTAssertTrue(FileManager.default.fileExists(atPath: moved))
        XCTAssertFalse(FileManager.default.fileExists(atPath: dbPath))
        let fresh = try openDatabase()
        try fresh.restore(salvaged)
        XCTAssertEqual(
            try fresh.outboxEntries().map { [$0.opId, $0.message.text, "\($0.baseSeq)", "\($0.createdMillis)"] },
            entries.map { [$0.opId, $0.message.text, "7", "\($0.createdMillis)"] })
        XCTAssertEqual(try fresh.metadata("terminal.id"), "terminal-1")
        XCTAssertEqual(try fresh.orderCount(), 0)
        assertStoreError(.damaged) { try OrderDatabase.openReadOnly(path: moved) }
    }

    func testAnUnreadableOutboxIsReportedNotInvented() throws {
        _ = try makeStore(orders: 5, role: "slave")
        do {
            let db = try openDatabase()
            try db.appendOutbox(OutboxEntry(opId: "queued", message: Array("{}".utf8), orderKeys: [], createdMillis: 1))
            db.close()
        }
        try overwriteRootPage(of: "outbox")
        let salvaged = OrderDatabase.salvageReplica(path: dbPath)
        XCTAssertNil(salvaged.outbox)
        XCTAssertNotNil(salvaged.outboxError)
        XCTAssertEqual(salvaged.metadata["node.role"], "slave")
    }

    func testABackupIsACheckedCopyThatAMasterAdoptsInANewTermOfTheSameEpoch() throws {
        let orders = try makeStore(orders: 50)
        let writer = try openDatabase()
        let epoch = try writer.databaseEpoch()
        let file = directory + "/backup.sqlite"
        // Made while a writer holds the file open, with uncheckpointed changes in its WAL.
        try writer.setMetadata("store.id", "shop1")
        let summary = try OrderDatabase.backup(from: dbPath, to: file, overwrite: false, madeMillis: 1_700_000_000_123)
        XCTAssertEqual(summary.orders, 50)
        XCTAssertEqual(summary.journalSeq, 50)
        XCTAssertEqual(summary.epoch, epoch)
        XCTAssertEqual(summary.role, "master")
        XCTAssertNil(summary.replicaSeq)
        XCTAssertEqual(summary.schemaVersion, OrderDatabase.schemaVersion)
        XCTAssertEqual(summary.bytes, Int64(fileSize(file)))
        XCTAssertFalse(FileManager.default.fileExists(atPath: file + "-wal"), "the backup is one file")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.contains(".tmp-") }
        XCTAssertEqual(leftovers, [])
        var info = stat()
        XCTAssertEqual(stat(file, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600)

        // A second backup to the same file is refused unless asked for.
        writer.close()
        assertStoreError(.duplicate) { try OrderDatabase.backup(from: dbPath, to: file, overwrite: false, madeMillis: 1) }
        XCTAssertEqual(
            try OrderDatabase.backup(from: dbPath, to: file, overwrite: true, madeMillis: 1_700_000_000_123, nodeId: "KX4M-2Q7B").orders, 50
        )

        let restored = try OrderDatabase(path: file)
        XCTAssertEqual(try restored.quickCheck(), [])
        XCTAssertEqual(try restored.metadata("store.id"), "shop1")
        XCTAssertEqual(Set(try restored.allOrders().map(\.uuid)), Set(orders.map(\.uuid)))
        let adopted = try XCTUnwrap(try restored.adoptRestoredBackup())
        XCTAssertEqual(adopted.previousEpoch, epoch)
        XCTAssertEqual(adopted.madeMillis, 1_700_000_000_123)
        XCTAssertEqual(adopted.madeByNodeId, "KX4M-2Q7B", "the key the copy must be restored with")
        // A master's store keeps its epoch: its slaves keep their replicas and send back what
        // they hold beyond seq 50, which the new term tells apart from what it appends next.
        XCTAssertEqual(adopted.newEpoch, epoch)
        XCTAssertEqual(try restored.databaseEpoch(), epoch)
        // The new term is the master's own ballot (PROTOCOL 7.16): the first term above 1 that
        // its member number (1, the first given) owns, which no promoted till can hold.
        XCTAssertEqual(adopted.previousTerm, 1)
        XCTAssertEqual(try restored.ownMemberNumber(), 1)
        XCTAssertEqual(adopted.term, TermBallot.modulus + 1)
        XCTAssertEqual(TermBallot.owner(of: adopted.term ?? 0), 1)
        XCTAssertEqual(adopted.termStart, 51)
        XCTAssertEqual(try restored.term(), TermBallot.modulus + 1)
        XCTAssertEqual(try restored.termStarts().starts, [1: 1, TermBallot.modulus + 1: 51])
        XCTAssertNil(try restored.adoptRestoredBackup(), "the mark is cleared: the next start keeps the term")
        XCTAssertEqual(try restored.term(), TermBallot.modulus + 1)
        XCTAssertNil(try openDatabase().adoptRestoredBackup(), "the source was never marked")
    }

    func testADamagedStoreIsNotBackedUp() throws {
        _ = try makeStore(orders: 20)
        try overwriteRootPage(of: "orders")
        let file = directory + "/backup.sqlite"
        assertStoreError(.damaged) { try OrderDatabase.backup(from: dbPath, to: file, overwrite: false, madeMillis: 1) }
        let written = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasPrefix("backup") }
        XCTAssertEqual(written, [], "neither the backup nor its temporary file is left")
    }
}
