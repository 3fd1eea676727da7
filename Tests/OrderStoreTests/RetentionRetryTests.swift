import Foundation
import JSON
import SyncCore
import XCTest

@testable import OrderStore

/// Retries that reach past what is kept: the 10,000 answers a node keeps for its local API,
/// the 10,000 master answers a slave keeps, and an outbox entry of a terminal the master forgot.
final class RetentionRetryTests: RetentionTestCase {
    func testTheNewest10000APIAnswersAreKeptAndTheOldestGoesFirst() throws {
        let db = try openDatabase()
        let kept = Int(OrderDatabase.maxAPIAnswers)
        XCTAssertEqual(kept, 10_000)
        try db.transaction {
            for i in 0...kept { try db.saveAPIAnswer(opId: "op-\(i)", status: 200, body: "{\"i\":\(i)}", atMillis: Int64(i)) }
        }
        XCTAssertNil(try db.apiAnswer(opId: "op-0"), "the oldest answer is evicted by the 10,001st")
        XCTAssertEqual(try db.apiAnswer(opId: "op-1")?.body, "{\"i\":1}")
        XCTAssertEqual(try db.apiAnswer(opId: "op-\(kept)")?.body, "{\"i\":\(kept)}")

        XCTAssertEqual(SlaveCommit.answeredKept, 10_000)
        try db.transaction {
            for i in 0...SlaveCommit.answeredKept {
                try db.recordAnswered(
                    AnsweredOperation(opId: "a-\(i)", seq: Int64(i + 1), applied: [], errors: [], answeredMillis: 0),
                    keep: SlaveCommit.answeredKept)
            }
        }
        XCTAssertNil(try db.answeredOperation(opId: "a-0"))
        XCTAssertEqual(try db.answeredOperation(opId: "a-1")?.seq, 2)
    }

    /// A slave answers a retry from its kept answer; once 10,000 newer answers pushed it out,
    /// the retry is taken as a new local change and sent, and the master answers it from its
    /// journal: the same `seq`, nothing applied twice, the replica back to the master's truth.
    func testARetryWhoseKeptAnswerWasEvictedIsAnsweredFromTheMastersJournal() throws {
        let (mdb, master) = try makeMaster()
        let (sdb, slave) = try makeSlave()
        let u = UUID().uuidString.lowercased()
        _ = master.apply(create(u), origin: "m", now: t0)
        converse(slave, master, peer: 1, now: t0)
        XCTAssertNil(slave.localWrite(note(u, "first"), opId: "op-1", now: t0 + 1).0.failure)
        converse(slave, master, peer: 2, now: t0 + 1)
        XCTAssertEqual(try sdb.answeredOperation(opId: "op-1")?.seq, 2)
        let kept = try XCTUnwrap(sdb.answeredOperation(opId: "op-1"))
        XCTAssertEqual(slave.localWrite(note(u, "first"), opId: "op-1", now: t0 + 2).0.failure, .answered(kept), "answered on the slave")
        XCTAssertEqual(master.apply(note(u, "second"), origin: "m", now: t0 + 3).seq, 3)
        converse(slave, master, peer: 3, now: t0 + 3)
        XCTAssertEqual(try sdb.order(uuid: u)?.note, "second")

        try sdb.transaction {
            for i in 0..<SlaveCommit.answeredKept {
                try sdb.recordAnswered(
                    AnsweredOperation(opId: "filler-\(i)", seq: nil, applied: [], errors: [], answeredMillis: t0 + 4),
                    keep: SlaveCommit.answeredKept)
            }
        }
        XCTAssertNil(try sdb.answeredOperation(opId: "op-1"), "evicted")
        let later = t0 + 2 * day
        XCTAssertNil(slave.localWrite(note(u, "first"), opId: "op-1", now: later).0.failure, "taken as a new change")
        converse(slave, master, peer: 4, now: later)
        XCTAssertEqual(master.lastSeq, 3, "the master recognised the operation id")
        XCTAssertEqual(try journalSeqs(of: "op-1", in: mdb), [2])
        XCTAssertEqual(try mdb.order(uuid: u)?.note, "second")
        XCTAssertEqual(try sdb.answeredOperation(opId: "op-1")?.seq, 2, "answered with its original seq")
        XCTAssertEqual(try sdb.outboxCount(), 0)
        XCTAssertEqual(try sdb.order(uuid: u)?.note, "second", "the replica went back to the master's truth")
    }

    /// Till-1 changes an order offline; the master applies the change but the answer is lost.
    /// Returns the order's uuid; the change (`op-s`, seq 2) stays in the outbox, and a newer
    /// change from elsewhere is seq 3.
    private func answerLost(_ master: MasterEngine, _ slave: SlaveEngine) throws -> String {
        let u = UUID().uuidString.lowercased()
        _ = master.apply(create(u), origin: "m", now: t0)
        converse(slave, master, peer: 1, now: t0)
        XCTAssertNil(slave.localWrite(note(u, "mine"), opId: "op-s", now: t0 + 1).0.failure)
        guard case .success(.operation(let m)) = ClientMessage.decode(try XCTUnwrap(slave.outbox.first).message) else {
            XCTFail("the outbox entry is an operation")
            return u
        }
        XCTAssertEqual(master.apply(m, origin: "till-1", now: t0 + 1).seq, 2)
        XCTAssertEqual(master.apply(note(u, "later"), origin: "m", now: t0 + 2).seq, 3)
        return u
    }

    func testAnOutboxEntryOfAForgottenTerminalIsRecognisedWhileTheJournalHoldsIt() throws {
        let (mdb, master) = try makeMaster()
        let (sdb, slave) = try makeSlave()
        let u = try answerLost(master, slave)
        _ = master.maintenance(now: t0 + 31 * day)
        XCTAssertEqual(try mdb.knownTerminals().count, 0, "away 31 days: forgotten")
        converse(slave, master, peer: 2, now: t0 + 31 * day)
        XCTAssertEqual(try journalSeqs(of: "op-s", in: mdb), [2], "not applied twice")
        XCTAssertEqual(try mdb.order(uuid: u)?.note, "later")
        XCTAssertEqual(try sdb.order(uuid: u)?.note, "later")
        XCTAssertEqual(try sdb.outboxCount(), 0)
    }

    /// The one way an operation id is applied twice without a client's help (PROTOCOL.md 4.6):
    /// its terminal is away past the 30-day horizon (forgotten, its acknowledgement no longer
    /// holds the journal), the entry is older than 30 days and the journal moved on by more
    /// than the newest kept (100,000 in a shipped master; 1 here). The snapshot cannot name it
    /// as applied, and the terminal sends it again.
    func testAnOutboxEntryOfAForgottenTerminalIsAppliedAgainOnceItsEntryIsCompacted() throws {
        let (mdb, master) = try makeMaster()
        let (sdb, slave) = try makeSlave()
        let u = try answerLost(master, slave)
        master.journalKeepNewest = 1
        _ = master.maintenance(now: t0 + 29 * day)
        XCTAssertEqual(try mdb.firstJournalSeq(), 1, "29 days: nothing is old enough")
        _ = master.maintenance(now: t0 + 31 * day)
        XCTAssertEqual(try mdb.knownTerminals().count, 0)
        XCTAssertEqual(try mdb.firstJournalSeq(), 3)
        converse(slave, master, peer: 2, now: t0 + 31 * day)
        XCTAssertEqual(try journalSeqs(of: "op-s", in: mdb), [4], "applied again, as seq 4")
        XCTAssertEqual(try mdb.order(uuid: u)?.note, "mine", "the newer change is undone")
        XCTAssertEqual(try sdb.outboxCount(), 0)
    }
}
