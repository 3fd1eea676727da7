import Foundation
import JSON
import SyncCore
import XCTest

@testable import OrderStore

/// The master's retention with its real horizons and a wall clock that jumps past them
/// (Docs/PROTOCOL.md 4.6 and 6): a journal entry, and so the recognition of its operation id,
/// stays while it is younger than 30 days, OR among the newest `journalKeepNewest`, OR not yet
/// acknowledged by a known terminal; a terminal not seen for 30 days is forgotten.
final class RetentionTests: RetentionTestCase {
    /// A live slave (peer 1) sends `op-1` (a note on order `u`, seq 2) at `t0`; the master then
    /// applies a newer note and three more orders (seq 3-6), and the slave acknowledges them all.
    /// Returns the master's answer to `op-1`, as first sent.
    private func noteThenNewerChanges(_ master: MasterEngine, _ u: String) throws -> [String] {
        _ = hello(master, peer: 1, lastSeq: 0, epoch: nil, now: t0)
        XCTAssertEqual(master.peers[1]?.phase, .live)
        XCTAssertEqual(master.apply(create(u), origin: "m", now: t0).seq, 1)
        let first = texts(master.received(note(u, "first", opId: "op-1").encoded(), from: 1, now: t0), to: 1)
        XCTAssertEqual(master.lastSeq, 2)
        XCTAssertEqual(master.apply(note(u, "second"), origin: "m", now: t0 + 1).seq, 3)
        for n in 0..<3 { _ = master.apply(create(UUID().uuidString.lowercased()), origin: "m", now: t0 + 2 + Int64(n)) }
        _ = master.received(ClientMessage.encodeAck(seq: 6), from: 1, now: t0 + 10)
        return first
    }

    func testARetryInsideTheWindowGetsTheOriginalAnswerAndIsNotAppliedTwice() throws {
        let (db, master) = try makeMaster()
        let u = UUID().uuidString.lowercased()
        let first = try noteThenNewerChanges(master, u)
        // Few entries kept by count: only the age of the entry holds it.
        master.journalKeepNewest = 1
        _ = master.maintenance(now: t0 + 29 * day)
        XCTAssertEqual(try db.firstJournalSeq(), 1, "nothing is 30 days old yet")
        let again = texts(master.received(note(u, "first", opId: "op-1").encoded(), from: 1, now: t0 + 29 * day), to: 1)
        XCTAssertEqual(again, first, "the original broadcast (seq 2) and result, word for word")
        XCTAssertEqual(master.lastSeq, 6, "not applied again")
        XCTAssertEqual(try db.order(uuid: u)?.note, "second", "the newer change stands")
        XCTAssertEqual(try journalSeqs(of: "op-1", in: db), [2])
    }

    func testWithTheShippedCountARetryAfterThirtyDaysIsStillRecognised() throws {
        let (db, master) = try makeMaster()
        let u = UUID().uuidString.lowercased()
        let first = try noteThenNewerChanges(master, u)
        // 31 days on: older than the history horizon, but among the newest 100,000 entries.
        let later = t0 + 31 * day
        _ = master.maintenance(now: later)
        XCTAssertEqual(try db.firstJournalSeq(), 1)
        XCTAssertEqual(texts(master.received(note(u, "first", opId: "op-1").encoded(), from: 1, now: later), to: 1), first)
        XCTAssertEqual(master.lastSeq, 6)
        XCTAssertEqual(try db.order(uuid: u)?.note, "second")
    }

    /// The documented limit (PROTOCOL.md 4.6): once the entry is older than 30 days, beyond the
    /// newest kept and acknowledged by every known terminal, the master no longer knows the
    /// operation id, and a retry is judged as a new operation: here it undoes the newer note.
    func testARetryAfterItsEntryWasCompactedIsJudgedAsANewOperation() throws {
        let (db, master) = try makeMaster()
        let u = UUID().uuidString.lowercased()
        _ = try noteThenNewerChanges(master, u)
        master.journalKeepNewest = 2 // stands for the 100,000 newer entries of a real store
        let later = t0 + 31 * day
        _ = master.maintenance(now: later)
        XCTAssertEqual(try db.firstJournalSeq(), 5, "entries 1-4 are 31 days old, acknowledged and not among the newest 2")
        XCTAssertEqual(try journalSeqs(of: "op-1", in: db), [])
        let again = texts(master.received(note(u, "first", opId: "op-1").encoded(), from: 1, now: later), to: 1)
        XCTAssertTrue(again.contains { $0.contains("\"seq\":7") }, "applied again, as seq 7: \(again)")
        XCTAssertEqual(try db.order(uuid: u)?.note, "first")
        XCTAssertEqual(try journalSeqs(of: "op-1", in: db), [7])
    }

    func testAKnownTerminalThatHasNotAcknowledgedAnEntryHoldsItPastThirtyDays() throws {
        let (db, master) = try makeMaster()
        let u = UUID().uuidString.lowercased()
        let first = try noteThenNewerChanges(master, u)
        master.journalKeepNewest = 2
        // A second terminal, seen 2 days in, applied only up to seq 1.
        try db.saveTerminal(KnownTerminal(id: "TILL-0002-BBBB", name: "till-2", address: "x", ackedSeq: 1, lastSeenMillis: t0 + 2 * day))
        let later = t0 + 31 * day
        _ = master.maintenance(now: later)
        XCTAssertEqual(try db.knownTerminals().count, 2, "both seen within 30 days")
        XCTAssertEqual(try db.firstJournalSeq(), 2, "entry 2 waits for till-2")
        XCTAssertEqual(texts(master.received(note(u, "first", opId: "op-1").encoded(), from: 1, now: later), to: 1), first)
        XCTAssertEqual(master.lastSeq, 6)
        XCTAssertEqual(try db.order(uuid: u)?.note, "second")
    }

    func testATerminalAwayPastTheHorizonIsForgottenThenCaughtUpOrGivenASnapshot() throws {
        let (db, master) = try makeMaster()
        let (sdb, slave) = try makeSlave()
        let u = UUID().uuidString.lowercased()
        _ = master.apply(create(u), origin: "m", now: t0)
        converse(slave, master, peer: 1, now: t0)
        XCTAssertEqual(slave.lastSeq, 1)
        XCTAssertEqual(try db.knownTerminals().map(\.ackedSeq), [1])
        for n in 0..<4 { _ = master.apply(note(u, "n\(n)"), origin: "m", now: t0 + Int64(n)) }
        // Away 31 days: forgotten; the journal still holds what it missed (the newest 100,000).
        _ = master.maintenance(now: t0 + 31 * day)
        XCTAssertEqual(try db.knownTerminals().count, 0, "forgotten")
        let caughtUp = converse(slave, master, peer: 2, now: t0 + 31 * day)
        XCTAssertFalse(caughtUp.contains { $0.contains("\"snapshot\"") }, "the exact missed entries, no snapshot")
        XCTAssertEqual(caughtUp.filter { $0.contains("\"seq\":") && $0.contains("\"operation\"") }.count, 4)
        XCTAssertEqual(slave.lastSeq, 5)
        XCTAssertEqual(try db.knownTerminals().map(\.ackedSeq), [5], "known again, at its ack")

        // Away another 31 days while the journal moved past its position: a snapshot.
        for n in 0..<3 { _ = master.apply(note(u, "m\(n)"), origin: "m", now: t0 + 32 * day + Int64(n)) }
        master.journalKeepNewest = 1
        _ = master.maintenance(now: t0 + 63 * day)
        XCTAssertEqual(try db.knownTerminals().count, 0)
        XCTAssertEqual(try db.firstJournalSeq(), 8, "only the newest entry is kept")
        let answer = converse(slave, master, peer: 3, now: t0 + 63 * day)
        XCTAssertTrue(answer.first?.contains("\"snapshot\"") ?? false, "a lastSeq older than the journal gets a snapshot: \(answer)")
        XCTAssertEqual(slave.lastSeq, 8)
        XCTAssertEqual(try sdb.order(uuid: u)?.note, "m2")
    }
}
