import SyncCore
import XCTest

@testable import OrderStore

/// The term starts a candidate learns with a fetched tail (`applyFetchedEntries`).
extension StandbyStoreTests {
    /// Found by `EngineFailoverSimulationTests` (seed 124): a candidate fetched entries 4-5 of
    /// term 3 but kept term starts without term 3, so its history read them as term 2; a
    /// returning master of term 2 holding its own entries 4-5 was told they were shared, and
    /// its write at 4 was lost instead of re-queued.
    func testFetchedEntriesOfANewTermRecordWhereItBegan() throws {
        let db = try openDatabase()
        try db.setTermStarts(TermStarts([1: 1, 2: 2]))
        try db.appendJournal(broadcast(.create, "9437c8f5-d742-46cb-9847-737c58093901", seq: 1, term: 1))
        try db.appendJournal(broadcast(.create, "9437c8f5-d742-46cb-9847-737c58093902", seq: 2, term: 2))
        try db.appendJournal(broadcast(.create, "9437c8f5-d742-46cb-9847-737c58093903", seq: 3, term: 2))
        XCTAssertEqual(
            try db.applyFetchedEntries([
                broadcast(.create, "9437c8f5-d742-46cb-9847-737c58093904", seq: 4, term: 3),
                broadcast(.create, "9437c8f5-d742-46cb-9847-737c58093905", seq: 5, term: 3),
            ]), 2)
        XCTAssertEqual(try db.termStarts().starts, [1: 1, 2: 2, 3: 4])
        // A returning master of term 2 with its own entries 4-5 shares entries up to 3 only.
        XCTAssertEqual(try db.termStarts().sharedSeq(lastSeq: 5, with: TermStarts([1: 1, 2: 2]), otherLastSeq: 5), 3)
    }

    /// Entries replacing this store's own (from seq 3): the start of its own term 3 goes with
    /// them, and the fetched term 2 runs on.
    func testFetchedEntriesReplacingOwnOnesDropTheirTermStart() throws {
        let db = try openDatabase()
        try db.setTermStarts(TermStarts([1: 1, 3: 3]))
        try db.appendJournal(broadcast(.create, "9437c8f5-d742-46cb-9847-737c58093901", seq: 1, term: 1))
        try db.appendJournal(broadcast(.create, "9437c8f5-d742-46cb-9847-737c58093902", seq: 2, term: 1))
        try db.appendJournal(broadcast(.create, "9437c8f5-d742-46cb-9847-737c58093903", seq: 3, term: 3))
        XCTAssertEqual(
            try db.applyFetchedEntries([broadcast(.create, "9437c8f5-d742-46cb-9847-737c58093904", seq: 3, term: 2)]), 1)
        XCTAssertEqual(try db.termStarts().starts, [1: 1, 2: 3])
    }
}
