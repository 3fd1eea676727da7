import Foundation
import OrderStore
import RollupCore
import SyncCore
import XCTest

@testable import OrderSyncNode

/// `RollupLocalJournal.extent` on a standby's store on disk: the copy ends at the replica's seq
/// when its journal is empty after a snapshot, so a checkpoint below the snapshot's base is a gap,
/// and past the base the journal and the replica agree.
final class RollupLocalJournalTests: XCTestCase {
    private var directory = ""

    override func setUpWithError() throws {
        directory = NSTemporaryDirectory() + "rollup-local-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: directory) }

    /// A slave's store whose copy came from a snapshot at `base` (replica at `base`, empty
    /// journal), then holds the broadcasts `base+1 ... base+after`, with the stable seq `stable`.
    private func standby(base: Int64, after: Int64, stable: Int64) throws -> RollupLocalJournal {
        let db = try OrderDatabase(path: directory + "/" + NodeDefaults.databaseFile)
        try db.setMetadata("node.role", "slave")
        try db.setMetadata("replica.store", "s1")
        try db.setMetadata("replica.epoch", "e1")
        try db.setMetadata("standby.base", String(base))
        try db.setMetadata("replica.last_seq", String(base + after))
        try db.setMetadata(StableSeq.metadataKey, String(stable))
        for seq in stride(from: base + 1, through: base + after, by: 1) {
            try db.appendJournal(
                JournalEntry(
                    seq: seq, opId: "op-\(seq)", origin: "m", operation: .create, orderUUIDs: [UUID().uuidString],
                    message: Array(#"{"type":"broadcast"}"#.utf8), recordedAtMillis: 1000 + seq))
        }
        db.close()
        return try RollupLocalJournal(dataDirectory: directory)
    }

    private func decide(_ e: RollupLocalJournal.Extent, checkpoint: Int64) -> RollupRange {
        RollupRange.decide(checkpoint: checkpoint, oldest: e.oldest, newest: e.newest, stable: e.stable)
    }

    func testACopyFromASnapshotEndsAtItsBaseAndReportsTheEntriesBelowAsAGap() throws {
        let extent = try standby(base: 5, after: 0, stable: 5).extent()
        XCTAssertEqual(extent, RollupLocalJournal.Extent(oldest: nil, newest: 5, stable: 5))
        XCTAssertEqual(decide(extent, checkpoint: 0), .gap(first: 1, last: 5))
        XCTAssertEqual(decide(extent, checkpoint: 3), .gap(first: 4, last: 5))
        // Head office already holds the base: nothing is missing, nothing to ship.
        XCTAssertEqual(decide(extent, checkpoint: 5), .caughtUp)
        XCTAssertEqual(decide(extent, checkpoint: 7), .caughtUp)
    }

    func testPastTheBaseTheJournalAndTheReplicaAgree() throws {
        let extent = try standby(base: 5, after: 3, stable: 8).extent()
        XCTAssertEqual(extent, RollupLocalJournal.Extent(oldest: 6, newest: 8, stable: 8))
        XCTAssertEqual(decide(extent, checkpoint: 5), .ship(first: 6, last: 8))
        XCTAssertEqual(decide(extent, checkpoint: 2), .gap(first: 3, last: 5))
    }

    func testACopyThatHasNotHeardAStableSeqStillReportsTheGap() throws {
        let extent = try standby(base: 5, after: 0, stable: 0).extent()
        XCTAssertEqual(extent, RollupLocalJournal.Extent(oldest: nil, newest: 5, stable: 0))
        XCTAssertEqual(decide(extent, checkpoint: 0), .gap(first: 1, last: 5))
        XCTAssertEqual(decide(extent, checkpoint: 5), .caughtUp)
    }

    func testAStandbyShipsOnlyWhatIsStable() throws {
        let extent = try standby(base: 5, after: 3, stable: 6).extent()
        XCTAssertEqual(extent.stable, 6)
        XCTAssertEqual(decide(extent, checkpoint: 5), .ship(first: 6, last: 6))
    }
}
