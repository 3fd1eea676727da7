import Foundation
import JSON
import SyncCore
import XCTest

@testable import OrderStore

/// The two ways of `Docs/PROTOCOL.md` 7.19 a write left a standby's journal through a snapshot,
/// closed: the standby keeps through a snapshot of its lineage the journal entries above the
/// stable seq it knew, and its own writes the snapshot's `applied` answered, as journal entries
/// of their seq below the base; a later `diverged` below the base re-queues them with their op
/// ids. Five voters as in the class's first test: Q (term 1) and standbys X, M, A, B; Q's disk
/// dies, and M, A and B (who never held the write) promote M to term 2 at seq 2. Each case runs
/// on both snapshot paths (staged on SQLite, and whole).
extension DivergenceBelowSnapshotBaseTests {
    /// Way 2: X's own write op-x (seq 2), still in its outbox when Q's snapshot at 3 answers it
    /// (`applied`), survives: re-queued once on M's `diverged keep=1`, journalled once by M.
    func testAWriteASnapshotAnsweredIsRequeuedOnDivergedBelowTheBase() throws {
        for staged in [true, false] {
            let q = try MasterEngine(store: SQLiteMasterStore(db: try OrderDatabase.inMemory()), storeId: "s", epoch: "e")
            XCTAssertEqual(q.apply(create(1, opId: "op-a"), origin: "q", now: 1).seq, 1)
            let x = try OrderDatabase.inMemory()
            let (slave, _) = try connect(x, to: q, peer: 1, staged: staged)
            XCTAssertEqual(try x.standbyBase(), 1)

            // X writes op-x; Q applies it at 2, and the link drops before X hears so.
            let (_, sent) = slave.localWrite(create(5, opId: "op-x"), opId: "op-x", now: 1_000)
            let op = try XCTUnwrap(sent.compactMap { if case .send(let b) = $0 { return b } else { return nil } }.first)
            XCTAssertEqual(q.received(op, from: 1, now: 1_000).isEmpty, false)
            _ = q.peerDisconnected(1, now: 1_000)
            XCTAssertEqual(q.apply(create(2, opId: "op-b"), origin: "q", now: 2).seq, 3)

            // Too far behind for a catch-up: a snapshot at 3 whose `applied` answers op-x.
            q.maxCatchUpEntries = 1
            let (_, answer) = try connect(x, to: q, peer: 2, staged: staged)
            XCTAssertTrue(answer.contains { $0.contains("\"applied\":{\"op-x\":2}") }, "\(answer)")
            XCTAssertEqual(try x.outboxEntries(), [], "answered, op-x left the outbox")
            XCTAssertEqual(try x.standbyBase(), 3)
            XCTAssertEqual(try x.journalEntry(opId: "op-x")?.seq, 2, "kept below the base as the entry of its seq")
            XCTAssertNil(try x.firstJournalSeq(), "not part of the gapless journal a catch-up or fetch reads")

            try assertSurvivesPromotionWithoutIt(x, opId: "op-x", uuid: 5, staged: staged)
        }
    }

    /// Way 3: the entry op-j (seq 2) X journalled as the standby that answered it replicated
    /// leaves the journal when Q's later snapshot at 4 (a catch-up too long) replaces it; it
    /// survives: re-queued once on M's `diverged keep=1`, journalled once by M.
    func testAJournalledEntryASnapshotReplacedIsRequeuedOnDivergedBelowTheBase() throws {
        for staged in [true, false] {
            let q = try MasterEngine(store: SQLiteMasterStore(db: try OrderDatabase.inMemory()), storeId: "s", epoch: "e")
            XCTAssertEqual(q.apply(create(1, opId: "op-a"), origin: "q", now: 1).seq, 1)
            let x = try OrderDatabase.inMemory()
            let (slave, _) = try connect(x, to: q, peer: 1, staged: staged)

            // op-j through Q's local API: X journals it, and X's ack answers it replicated.
            let j = q.apply(create(2, opId: "op-j"), origin: "q", now: 2)
            var waits = ReplicationWaits<String, Int>()
            XCTAssertNil(waits.add(seq: 2, replicas: 1, standbys: q.standbys, deadline: 9, answer: "op-j"))
            _ = slave.received(try XCTUnwrap(j.broadcast), now: 2)
            for case .send(let ack) in slave.ackDue() { _ = q.received(ack, from: 1, now: 2) }
            XCTAssertEqual(waits.heard(q.standbys).map(\.replicated), [true], "acknowledged with X as the second disk")
            _ = q.peerDisconnected(1, now: 2)
            XCTAssertEqual(q.apply(create(3, opId: "op-b"), origin: "q", now: 3).seq, 3)
            XCTAssertEqual(q.apply(create(4, opId: "op-c"), origin: "q", now: 3).seq, 4)

            // A snapshot of the same history at 4 (no `diverged`) replaces X's journal.
            q.maxCatchUpEntries = 1
            let (_, answer) = try connect(x, to: q, peer: 2, staged: staged)
            XCTAssertTrue(answer.contains { $0.contains("\"snapshot\":") }, "\(answer)")
            XCTAssertFalse(answer.contains { $0.contains("\"type\":\"diverged\"") }, "\(answer)")
            XCTAssertEqual(try x.standbyBase(), 4)
            XCTAssertEqual(try x.journalEntries(after: 0, limit: 10).map(\.opId), ["op-j"], "kept below the base")

            try assertSurvivesPromotionWithoutIt(x, opId: "op-j", uuid: 2, staged: staged)
        }
    }

    /// Q's disk is gone; M (which held op-a only) is promoted to term 2 at 2 by M, A and B and
    /// writes op-m. X says hello: `diverged keep=1` puts `opId` back into its outbox once, with
    /// its id; sent, M journals it exactly once, and a repeat of it is answered, not applied.
    private func assertSurvivesPromotionWithoutIt(_ x: OrderDatabase, opId: String, uuid n: Int, staged: Bool) throws {
        let mDB = try OrderDatabase.inMemory()
        let m = try MasterEngine(store: SQLiteMasterStore(db: mDB), storeId: "s", epoch: "e")
        XCTAssertEqual(m.apply(create(1, opId: "op-a"), origin: "q", now: 1).seq, 1)
        m.terms = MasterTerms(term: 2, starts: TermStarts([1: 1, 2: 2]))
        XCTAssertEqual(m.apply(create(9, opId: "op-m"), origin: "m", now: 3).seq, 2)

        let (slave, answer, sent) = try join(x, to: m, peer: 3, staged: staged)
        let diverged = try XCTUnwrap(answer.first { $0.contains("\"type\":\"diverged\"") }, "\(answer)")
        XCTAssertTrue(diverged.contains("\"keep\":1"), diverged)
        XCTAssertEqual(try x.outboxEntries().map(\.opId), [opId], "re-queued once, with its op id")
        XCTAssertEqual(try x.journalEntries(after: 0, limit: 10), [], "and out of the journal")
        XCTAssertEqual(sent.filter { String(decoding: $0, as: UTF8.self).contains("\"\(opId)\"") }.count, 1, "sent once")
        for bytes in sent {
            for reply in texts(m.received(bytes, from: 3, now: 1_000), to: 3) { _ = slave.received(reply, now: 1_000) }
        }
        XCTAssertEqual(try x.outboxEntries(), [], "answered by M")
        XCTAssertEqual(try mDB.journalEntries(after: 0, limit: 10).map(\.opId), ["op-a", "op-m", opId])
        // Another standby re-queueing the same entry later: a repeat, by its op id.
        for bytes in sent { _ = m.received(bytes, from: 3, now: 1_001) }
        XCTAssertEqual(try mDB.journalEntries(after: 0, limit: 10).filter { $0.opId == opId }.count, 1, "journalled exactly once")
        let uuid = String(format: "7a0b3c4d-5e6f-4a1b-8c2d-%012d", n)
        XCTAssertNotNil(try mDB.order(uuid: uuid), "the write is in the new master's orders")
        XCTAssertNotNil(try x.order(uuid: uuid))
    }
}

/// A `SlaveStore` over SQLite that takes snapshots whole: it does not stage them
/// (`SnapshotStagingStore`), so the engine collects the parts and replaces the orders at once.
final class WholeSnapshotSlaveStore: SlaveStore {
    private let base: SQLiteSlaveStore

    init(_ base: SQLiteSlaveStore) { self.base = base }

    func order(uuid: String) throws -> Order? { try base.order(uuid: uuid) }
    func loadReplicaState() throws -> ReplicaState { try base.loadReplicaState() }
    func outboxEntries() throws -> [OutboxEntry] { try base.outboxEntries() }
    func answeredOperation(opId: String) throws -> AnsweredOperation? { try base.answeredOperation(opId: opId) }
    func commit(_ c: SlaveCommit) throws { try base.commit(c) }
    func standbyJournal(after seq: Int64) throws -> [JournalEntry] { try base.standbyJournal(after: seq) }
}
