import Foundation
import JSON
import SyncCore
import XCTest

@testable import OrderStore

/// Entries a standby kept through a snapshot (`Docs/PROTOCOL.md` 7.19) leave its journal when
/// the stable seq (7.18) passes them, in the commit that raises it: no promotion that was not
/// forced undoes them, so no `diverged` has them to re-queue. The gapless journal above the
/// snapshot's base is not touched (compaction alone bounds it).
final class KeptEntryPruneTests: StoreTestCase {
    private func entry(_ seq: Int64, _ opId: String) -> JournalEntry {
        JournalEntry(
            seq: seq, opId: opId, origin: "q", operation: .create,
            orderUUIDs: [String(format: "7a0b3c4d-5e6f-4a1b-8c2d-%012d", seq)], message: Array("{}".utf8), recordedAtMillis: 1)
    }

    /// The store: kept entries at 3 and 6 below a base of 10, entries 11 and 12 above it.
    func testRaisingTheStableSeqDropsTheKeptEntriesAtOrBelowItInTheSameCommit() throws {
        let db = try OrderDatabase.inMemory()
        let store = SQLiteSlaveStore(db: db)
        var snapshot = SlaveCommit()
        snapshot.standbyBase = 10
        snapshot.lastSeq = 10
        snapshot.keepJournalAbove = 0
        snapshot.keptEntries = [entry(3, "op-3"), entry(6, "op-6")]
        try store.commit(snapshot)
        var live = SlaveCommit()
        live.lastSeq = 12
        live.journal = [entry(11, "op-11"), entry(12, "op-12")]
        try store.commit(live)
        XCTAssertEqual(try db.journalEntries(after: 0, limit: 10).map(\.seq), [3, 6, 11, 12])
        XCTAssertEqual(try db.firstJournalSeq(), 11)

        var rose = SlaveCommit()
        rose.stableSeq = 5
        XCTAssertFalse(rose.isEmpty)
        try store.commit(rose)
        XCTAssertEqual(try db.journalEntries(after: 0, limit: 10).map(\.seq), [6, 11, 12], "3 is at or below the stable seq")
        XCTAssertEqual(try db.metadata(StableSeq.metadataKey), "5")
        XCTAssertEqual(try db.appliedOpIdSeq(opId: "op-3"), 3, "a retry of op-3 still finds its first seq")
        XCTAssertEqual(try db.journalEntry(opId: "op-3"), nil)

        // A lower value (a new process heard an older heartbeat) lowers nothing.
        rose.stableSeq = 4
        try store.commit(rose)
        XCTAssertEqual(try db.metadata(StableSeq.metadataKey), "5")
        XCTAssertEqual(try db.journalEntries(after: 0, limit: 10).map(\.seq), [6, 11, 12])

        // Past the base: every kept entry goes, the gapless journal above the base stays.
        rose.stableSeq = 12
        try store.commit(rose)
        XCTAssertEqual(try db.journalEntries(after: 0, limit: 10).map(\.seq), [11, 12])
        XCTAssertEqual(try db.firstJournalSeq(), 11)
        XCTAssertEqual(try db.lastJournalSeq(), 12)
        XCTAssertEqual(try db.metadata(StableSeq.metadataKey), "12")
        XCTAssertEqual(try db.appliedOpIdSeq(opId: "op-6"), 6)
    }

    /// A store that never took a snapshot (a master, or a standby that joined by catch-up) has
    /// nothing kept: raising the stable seq leaves its journal whole.
    func testWithoutASnapshotBaseRaisingTheStableSeqLeavesTheJournal() throws {
        let db = try OrderDatabase.inMemory()
        let store = SQLiteSlaveStore(db: db)
        var live = SlaveCommit()
        live.lastSeq = 2
        live.journal = [entry(1, "op-1"), entry(2, "op-2")]
        try store.commit(live)
        XCTAssertEqual(try db.transaction { try db.raiseStableSeq(to: 2) }, 0)
        XCTAssertEqual(try db.journalEntries(after: 0, limit: 10).map(\.seq), [1, 2])
        XCTAssertEqual(try db.metadata(StableSeq.metadataKey), "2")
    }
}
