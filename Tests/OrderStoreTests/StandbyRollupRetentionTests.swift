import SyncCore
import XCTest

@testable import OrderStore

/// A standby's compaction keeps what a roll-up on the terminal has not shipped to head office
/// (`OrderDatabase.rollupCheckpoint`), within `rollupKeepMost`, as a master's does.
final class StandbyRollupRetentionTests: StoreTestCase {
    /// Ten old entries (with tombstones) in a standby copy of store `s1`, lineage `e1`.
    private func tenOldEntries() throws -> OrderDatabase {
        let db = try openDatabase()
        try db.setMetadata("replica.store", "s1")
        try db.setMetadata("replica.epoch", "e1")
        for seq in Int64(1)...10 {
            try db.appendJournal(
                JournalEntry(
                    seq: seq, opId: nil, origin: "t", operation: .remove, orderUUIDs: ["u\(seq)"], message: Array("{}".utf8),
                    recordedAtMillis: 1))
            try db.addTombstone(uuid: "u\(seq)", seq: seq)
        }
        return db
    }

    func testWithoutARollupTheOldEntriesGo() throws {
        let db = try tenOldEntries()
        db.rollupCheckpoint = { _, _ in nil }
        XCTAssertEqual(try db.compactStandbyJournal(now: 9_000_000, keepNewest: 2, keepMillis: 1000), 8)
        XCTAssertEqual(try db.firstJournalSeq(), 9)
    }

    func testEntriesHeadOfficeLacksStay() throws {
        let db = try tenOldEntries()
        db.rollupCheckpoint = { store, lineage in store == "s1" && lineage == "e1" ? 4 : nil }
        XCTAssertEqual(try db.compactStandbyJournal(now: 9_000_000, keepNewest: 2, keepMillis: 1000), 4)
        XCTAssertEqual(try db.firstJournalSeq(), 5, "entries after head office's checkpoint stay")
        XCTAssertEqual(try db.tombstoneCount(), 6, "tombstones go with their entries only")
    }

    func testTheCapStillBoundsTheCopy() throws {
        let db = try tenOldEntries()
        db.rollupCheckpoint = { _, _ in 0 }
        XCTAssertEqual(try db.compactStandbyJournal(now: 9_000_000, keepNewest: 2, keepMillis: 1000, rollupKeepMost: 3), 7)
        XCTAssertEqual(try db.firstJournalSeq(), 8, "at most rollupKeepMost entries are kept for a lagging roll-up")
    }
}
