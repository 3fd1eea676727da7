import FaultVFS
import Foundation
import SyncCore
import XCTest

@testable import OrderStore

/// The log's checkpoints taken out of the COMMITs (`WALCheckpointer`): the COMMITs only add to
/// the log, the checkpointer copies it into the database file, and what was acknowledged
/// survives a power cut after such a checkpoint.
final class WALCheckpointerTests: StoreTestCase {
    func testCommitsOnlyAddToTheLogAndTheCheckpointerCopiesItIntoTheFile() throws {
        let db = try openDatabase()
        let checkpointer = try XCTUnwrap(WALCheckpointer(deferringFor: db), "no checkpointer for a file in WAL mode")
        defer { checkpointer.close() }
        let fileSize = { [dbPath] in (try? FileManager.default.attributesOfItem(atPath: dbPath)[.size] as? Int) ?? -1 }
        let sizeBefore = fileSize()
        var pages: [Int] = []
        var seq: Int64 = 0
        // Past twice SQLite's own threshold, where it would have checkpointed in a COMMIT.
        while (pages.last ?? 0) < 2 * WALCheckpointer.thresholdPages {
            seq += 1
            pages.append(try XCTUnwrap(commitGroup(db, seq: seq).walPages, "the COMMIT's log pages were not counted"))
        }
        XCTAssertEqual(pages, Array(Set(pages)).sorted(), "the log started again: a COMMIT checkpointed")
        XCTAssertEqual(fileSize(), sizeBefore, "a COMMIT copied pages into the database file")

        let outcome = try checkpointer.run().get()
        XCTAssertEqual(outcome.logPages, pages.last)
        XCTAssertEqual(outcome.checkpointedPages, outcome.logPages, "nothing else reads: the whole log is copied")
        XCTAssertGreaterThan(fileSize(), sizeBefore)
        // The next COMMIT writes the log from its start again.
        let next = try XCTUnwrap(commitGroup(db, seq: seq + 1).walPages)
        XCTAssertLessThan(next, pages[pages.count / 2])
        XCTAssertEqual(try OrderDatabase(path: dbPath).orderCount(), Int(seq + 1))
    }

    /// The log's file is never larger than its limit once a checkpoint copied it: emptied by
    /// `truncateLog()` when no group is open (a group holding the write lock makes it a no-op),
    /// or cut back to the limit by the writer's first COMMIT after the log started over.
    func testALogGrownPastItsLimitIsEmptiedOrCutBackOnceCheckpointed() throws {
        let db = try openDatabase()
        let checkpointer = try XCTUnwrap(WALCheckpointer(deferringFor: db))
        defer { checkpointer.close() }
        let logSize = { [dbPath] in (try? FileManager.default.attributesOfItem(atPath: dbPath + "-wal")[.size] as? Int) ?? -1 }
        var seq: Int64 = 0
        func grow(past bytes: Int) throws {
            while logSize() <= bytes {
                seq += 1
                _ = try commitGroup(db, seq: seq)
            }
        }
        try grow(past: WALCheckpointer.logSizeLimit)
        let grown = logSize()
        _ = try checkpointer.run().get()
        try db.beginGroup()
        XCTAssertEqual(try checkpointer.truncateLog().get(), .busy, "a group holds the write lock")
        db.rollbackGroup()
        XCTAssertEqual(logSize(), grown)
        XCTAssertEqual(try checkpointer.truncateLog().get(), .truncated)
        XCTAssertEqual(logSize(), 0)
        XCTAssertEqual(try checkpointer.truncateLog().get(), .withinLimit)

        // Grown again, copied, and then written over from its start by the next COMMIT, which
        // cuts the file back to the limit (`journal_size_limit` on the writer's connection).
        try grow(past: WALCheckpointer.logSizeLimit + 1024 * 1024)
        _ = try checkpointer.run().get()
        seq += 1
        _ = try commitGroup(db, seq: seq)
        XCTAssertLessThanOrEqual(logSize(), WALCheckpointer.logSizeLimit)
        XCTAssertEqual(try OrderDatabase(path: dbPath).orderCount(), Int(seq))
    }

    func testAStoreInMemoryKeepsSQLitesOwnCheckpoints() throws {
        XCTAssertNil(WALCheckpointer(deferringFor: try OrderDatabase.inMemory()))
    }
}

/// Power cuts after deferred checkpoints (the fault VFS, as `PowerLossTests`).
final class WALCheckpointerPowerLossTests: FaultVFSStoreTestCase {
    /// Groups, a checkpoint by the checkpointer (on half the seeds the log emptied after it),
    /// more groups (the log written over from its start), then the power goes (unsynced writes dropped or torn, or a cut inside the
    /// checkpoint): every acknowledged order is there after the restart. A checkpoint that did
    /// not sync the database file before the log was written over would lose the first groups.
    func testEveryAcknowledgedGroupSurvivesAPowerCutAroundADeferredCheckpoint() throws {
        var checked = 0
        for seed: UInt64 in 1...24 {
            let path = startSeed(seed)
            var rng = SplitMix(seed)
            let db = try OrderDatabase(path: path)
            let checkpointer = try XCTUnwrap(WALCheckpointer(deferringFor: db))
            var acknowledged: [Order] = []
            var seq: Int64 = 0
            func group() throws {
                seq += 1
                acknowledged.append(try commitGroup(db, seq: seq).order)
            }
            for _ in 0..<(5 + rng.next() % 20) { try group() }
            let cutInCheckpoint = rng.next() % 3 == 0
            if cutInCheckpoint {
                FaultVFS.arm(.powerCut(.drop), on: rng.next() % 2 == 0 ? .sync : .write, under: machine, nth: Int(1 + rng.next() % 4))
            }
            _ = checkpointer.run()
            // Half the seeds empty the log after the checkpoint (`truncateLog`, as an idle
            // writer does with a log past its limit) before the next groups.
            if !cutInCheckpoint, rng.next() % 2 == 0 {
                XCTAssertEqual(try checkpointer.truncateLog(over: 0).get(), .truncated, "seed \(seed)")
            }
            if cutInCheckpoint {
                checkpointer.close()
                restoreAfterArmedCut(db)
            } else {
                for _ in 0..<(1 + rng.next() % 5) { try group() }
                checkpointer.close()
                losePower(db, rng.next() % 2 == 0 ? .drop : .tear)
            }
            FaultVFS.disarm()

            let reopened = try OrderDatabase(path: path)
            for order in acknowledged {
                XCTAssertNotNil(try reopened.order(uuid: order.uuid), "seed \(seed): an acknowledged order was lost")
            }
            XCTAssertEqual(try reopened.quickCheck(), [], "seed \(seed)")
            checked += acknowledged.count
            reopened.close()
        }
        XCTAssertGreaterThan(checked, 0)
    }
}

extension StoreTestCase {
    /// One order and its journal entry committed as a group, its COMMIT detached as the
    /// store writer does; the order and the log's pages the COMMIT counted.
    func commitGroup(_ db: OrderDatabase, seq: Int64) throws -> (order: Order, walPages: Int?) {
        try db.beginGroup()
        let order = try commitOrder(db, seq: seq, customer: "c\(seq)")
        let commit = try db.detachGroupCommit()
        commit.run()
        try db.finishGroupCommit(commit).get()
        return (order, commit.walPages)
    }
}
