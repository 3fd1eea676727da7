import Foundation
import JSON
import SyncCore
import XCTest

@testable import OrderStore

/// The limits of what a standby keeps through a snapshot (`Docs/PROTOCOL.md` 7.19), each rule
/// with a test that fails when it is broken: nothing at or below the stable seq the standby knew
/// is kept (no promotion that was not forced undoes it), and a snapshot of another lineage
/// keeps nothing (another history's seqs are not this one's). Real engines on SQLite, both
/// snapshot paths (staged, and whole).
extension DivergenceBelowSnapshotBaseTests {
    /// Q (lineage e) applies op-a at 1; X joins it from a snapshot at 1 and journals op-j (2) and
    /// op-k (3), broadcasts of Q's.
    private func followingQ(staged: Bool) throws -> (MasterEngine, OrderDatabase, SlaveEngine) {
        let q = try MasterEngine(store: SQLiteMasterStore(db: try OrderDatabase.inMemory()), storeId: "s", epoch: "e")
        XCTAssertEqual(q.apply(create(1, opId: "op-a"), origin: "q", now: 1).seq, 1)
        let x = try OrderDatabase.inMemory()
        let (slave, _) = try connect(x, to: q, peer: 1, staged: staged)
        for (n, id) in [(2, "op-j"), (3, "op-k")] {
            _ = slave.received(try XCTUnwrap(q.apply(create(n, opId: id), origin: "q", now: 2).broadcast), now: 2)
        }
        XCTAssertEqual(try x.journalEntries(after: 0, limit: 10).map(\.opId), ["op-j", "op-k"])
        return (q, x, slave)
    }

    /// `slave` (already running) says hello to `master` on link `peer`, takes every answer and
    /// acks; returns the answers.
    private func reconnect(_ slave: SlaveEngine, to master: MasterEngine, peer: Int) -> [String] {
        _ = master.peerConnected(peer, address: "x", terminal: till)
        var seen: [String] = []
        for case .send(let hello) in slave.linkOpened() {
            for bytes in texts(master.received(hello, from: peer, now: 1_000), to: peer) {
                seen.append(String(decoding: bytes, as: UTF8.self))
                _ = slave.received(bytes, now: 1_000)
            }
        }
        for case .send(let ack) in slave.ackDue() { _ = master.received(ack, from: peer, now: 1_000) }
        return seen
    }

    /// X journals op-j (2) and op-k (3); its own op-x and op-y are applied by Q at 4 and 5 and
    /// their answers lost; a heartbeat says the stable seq is 4. Q's snapshot at 6 answers both
    /// writes (`applied`): of the four, only op-y (5, above the stable seq) is kept.
    func testNothingAtOrBelowTheStableSeqIsKeptThroughASnapshot() throws {
        for staged in [true, false] {
            let (q, x, slave) = try followingQ(staged: staged)

            // X's own writes reach Q (4 and 5); what Q answers is lost.
            for (n, id) in [(4, "op-x"), (5, "op-y")] {
                let (_, sent) = slave.localWrite(create(n, opId: id), opId: id, now: 1_000)
                for case .send(let bytes) in sent { _ = q.received(bytes, from: 1, now: 1_000) }
            }
            XCTAssertEqual(q.lastSeq, 5)
            q.rollup.stableSeq = 4
            _ = slave.received(try XCTUnwrap(q.heartbeat(for: 1)), now: 1_000)
            XCTAssertEqual(slave.stableSeq, 4)
            _ = q.peerDisconnected(1, now: 1_000)
            XCTAssertEqual(q.apply(create(6, opId: "op-b"), origin: "q", now: 3).seq, 6)

            // The same process (the stable seq it heard is in memory) connects again.
            slave.linkClosed()
            q.maxCatchUpEntries = 1
            let answer = reconnect(slave, to: q, peer: 2)
            XCTAssertTrue(answer.contains { $0.contains("\"applied\":{") && $0.contains("\"op-x\":4") }, "\(answer)")
            XCTAssertEqual(try x.standbyBase(), 6)
            XCTAssertEqual(try x.outboxEntries(), [], "both writes answered by the snapshot")
            XCTAssertEqual(
                try x.journalEntries(after: 0, limit: 10).map(\.opId), ["op-y"],
                "staged \(staged): op-j, op-k (journal) and op-x (own write) are at or below the stable seq 4")
        }
    }

    /// X follows Q (lineage e): it journals op-j (2) and op-k (3), and its own op-x is applied by
    /// Q at 4, the answer lost. Z, a master of another lineage (f) of the same store that also
    /// applied an op-x (at 2), answers X's hello with a snapshot at 6 whose `applied` names op-x:
    /// X keeps nothing of its journal and does not keep op-x as an entry of Z's history.
    func testASnapshotOfAnotherLineageKeepsNothing() throws {
        for staged in [true, false] {
            let (q, x, slave) = try followingQ(staged: staged)
            let (_, sent) = slave.localWrite(create(4, opId: "op-x"), opId: "op-x", now: 1_000)
            for case .send(let bytes) in sent { _ = q.received(bytes, from: 1, now: 1_000) }
            _ = q.peerDisconnected(1, now: 1_000)
            XCTAssertEqual(slave.stableSeq, 0, "no stable seq known: every entry up to a base of e's would be kept")

            let z = try MasterEngine(store: SQLiteMasterStore(db: try OrderDatabase.inMemory()), storeId: "s", epoch: "f")
            for (n, id) in [(11, "op-z1"), (4, "op-x"), (13, "op-z3"), (14, "op-z4"), (15, "op-z5"), (16, "op-z6")] {
                _ = z.apply(create(n, opId: id), origin: "z", now: 5)
            }
            XCTAssertEqual(z.lastSeq, 6)
            let (_, answer) = try connect(x, to: z, peer: 1, staged: staged)
            XCTAssertTrue(answer.contains { $0.contains("\"op-x\":2") }, "Z's snapshot answers op-x: \(answer)")
            XCTAssertEqual(try x.metadata("replica.epoch"), "f")
            XCTAssertEqual(try x.standbyBase(), 6)
            XCTAssertEqual(try x.outboxEntries(), [])
            XCTAssertEqual(try x.journalEntries(after: 0, limit: 10), [], "staged \(staged): nothing of lineage e kept")
        }
    }

    /// The engine: X keeps op-j (2) through Q's snapshot at 4 and journals op-d (5) above the
    /// base. A heartbeat's stable seq of 1 takes nothing; one of 5 takes op-j (kept, and now
    /// stable) in the commit that writes the stable seq, and leaves op-d (the gapless journal).
    func testAHeartbeatsStableSeqTakesTheKeptEntriesItPasses() throws {
        for staged in [true, false] {
            let q = try MasterEngine(store: SQLiteMasterStore(db: try OrderDatabase.inMemory()), storeId: "s", epoch: "e")
            XCTAssertEqual(q.apply(create(1, opId: "op-a"), origin: "q", now: 1).seq, 1)
            let x = try OrderDatabase.inMemory()
            let (first, _) = try connect(x, to: q, peer: 1, staged: staged)
            _ = first.received(try XCTUnwrap(q.apply(create(2, opId: "op-j"), origin: "q", now: 2).broadcast), now: 2)
            _ = q.peerDisconnected(1, now: 2)
            XCTAssertEqual(q.apply(create(3, opId: "op-b"), origin: "q", now: 3).seq, 3)
            XCTAssertEqual(q.apply(create(4, opId: "op-c"), origin: "q", now: 3).seq, 4)
            q.maxCatchUpEntries = 1
            let (slave, _) = try connect(x, to: q, peer: 2, staged: staged)
            XCTAssertEqual(try x.standbyBase(), 4)
            _ = slave.received(try XCTUnwrap(q.apply(create(5, opId: "op-d"), origin: "q", now: 4).broadcast), now: 4)
            XCTAssertEqual(try x.journalEntries(after: 0, limit: 10).map(\.opId), ["op-j", "op-d"])

            q.rollup.stableSeq = 1
            _ = slave.received(try XCTUnwrap(q.heartbeat(for: 2)), now: 5)
            XCTAssertEqual(try x.metadata(StableSeq.metadataKey), "1")
            XCTAssertEqual(try x.journalEntries(after: 0, limit: 10).map(\.opId), ["op-j", "op-d"], "op-j is above 1")

            q.rollup.stableSeq = 5
            _ = slave.received(try XCTUnwrap(q.heartbeat(for: 2)), now: 6)
            XCTAssertEqual(slave.stableSeq, 5)
            XCTAssertEqual(try x.metadata(StableSeq.metadataKey), "5")
            XCTAssertEqual(try x.journalEntries(after: 0, limit: 10).map(\.opId), ["op-d"], "staged \(staged): op-j went, op-d stays")
            XCTAssertEqual(try x.firstJournalSeq(), 5, "the gapless journal a catch-up, a fetch or the feed reads is whole")
            XCTAssertEqual(try x.appliedOpIdSeq(opId: "op-j"), 2, "a retry of op-j still finds its first seq")
        }
    }
}
