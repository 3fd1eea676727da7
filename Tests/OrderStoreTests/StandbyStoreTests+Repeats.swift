import SyncCore
import XCTest

@testable import OrderStore

/// A master promoted from a snapshot applied an operation again above its base: the standby
/// copy (and a candidate's fetched tail) keeps following it (`appendStandbyEntry`).
extension StandbyStoreTests {
    private func entry(seq: Int64, term: Int64, opId: String) -> JournalEntry {
        var e = broadcast(.create, "9437c8f5-d742-46cb-9847-737c580939\(String(format: "%02d", seq))", seq: seq, term: term)
        e.opId = opId
        return e
    }

    /// Found by `EngineFailoverSimulationTests` (seed 436): the standby holding `op-x` at 1
    /// failed `UNIQUE journal.op_id` on the master's second application at 2, on every reconnect.
    func testAStandbyKeepsAnOperationAppliedAgainWithoutItsId() throws {
        let db = try openDatabase()
        let store = SQLiteSlaveStore(db: db)
        var first = SlaveCommit()
        first.journal = [entry(seq: 1, term: 3, opId: "op-x")]
        try store.commit(first)
        var again = SlaveCommit()
        again.journal = [entry(seq: 2, term: 4, opId: "op-x"), entry(seq: 3, term: 4, opId: "op-y")]
        try store.commit(again)
        let journal = try db.journalEntries(after: 0, limit: 10)
        XCTAssertEqual(journal.map(\.seq), [1, 2, 3])
        XCTAssertEqual(journal.map(\.opId), ["op-x", nil, "op-y"], "the repeat is kept, its id only at the first place")
        XCTAssertEqual(try db.journalEntry(opId: "op-x")?.seq, 1, "a retry after a promotion finds the first place")
        XCTAssertEqual(journal[1].message, entry(seq: 2, term: 4, opId: "op-x").message, "the broadcast as received")
        // The same entry again (a catch-up after a lost ack) is still a duplicate, and a master's
        // own journal still refuses an operation id twice.
        XCTAssertThrowsError(try store.commit(again))
        XCTAssertThrowsError(try db.appendJournal(entry(seq: 4, term: 4, opId: "op-y")))
        XCTAssertEqual(try db.lastJournalSeq(), 3)
    }

    /// A candidate fetching a tail that holds such a repeat applies it the same way.
    func testAFetchedTailWithAnOperationAppliedAgainIsApplied() throws {
        let db = try openDatabase()
        try db.appendJournal(entry(seq: 1, term: 3, opId: "op-x"))
        XCTAssertEqual(try db.applyFetchedEntries([entry(seq: 2, term: 4, opId: "op-x")]), 1)
        XCTAssertEqual(try db.journalEntries(after: 0, limit: 10).map(\.opId), ["op-x", nil])
        XCTAssertEqual(try db.standbyPosition().lastSeq, 2)
    }
}
