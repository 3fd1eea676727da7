import Foundation
import JSON
import SyncCore
import XCTest

@testable import OrderStore

/// `diverged` below a standby's snapshot base (`Docs/PROTOCOL.md` 7.19): the entries between
/// `keep` and the base are in the node's orders only, not in its journal, so they cannot go back
/// into its outbox. The master therefore counts a standby's `held` only for the seqs above the
/// snapshot it sent it: a write the standby holds only inside a snapshot is not answered
/// `"replicated":true`. Real engines on SQLite: the case built step by step, and what is kept
/// and what is answered asserted.
///
/// Five voters: master Q (term 1), standbys X, M, A, B. X joins Q from a snapshot at 3 and so
/// holds Q's local write op-c (seq 3) only inside that snapshot; its ack (`held` 3) does not
/// answer op-c replicated. Q writes op-d (seq 4), which X journals: X's ack answers it
/// replicated. Q's disk dies; M, A and B (cut off since seq 1) are a majority and promote M to
/// term 2 without X. X then says hello to M: op-d goes back into X's outbox, op-c (answered
/// `"replicated":false`, lost with Q's disk as 7.8 says) does not.
final class DivergenceBelowSnapshotBaseTests: StoreTestCase {
    let till = AuthenticatedTerminal(nodeId: "TILL-000X-AAAA", name: "till-x")

    func create(_ n: Int, opId: String) -> OperationMessage {
        let uuid = String(format: "7a0b3c4d-5e6f-4a1b-8c2d-%012d", n)
        return OperationMessage(
            operation: .create, orders: [.object(JSONObject([("uuid", .string(uuid)), ("customerName", .string("c\(n)"))]))], opId: opId)
    }

    func texts(_ actions: [MasterEngine.Action], to peer: Int) -> [[UInt8]] {
        actions.compactMap {
            switch $0 {
            case .send(let p, let bytes) where p == peer: return bytes
            case .broadcast(let bytes, let peers) where peers.contains(peer): return bytes
            default: return nil
            }
        }
    }

    /// A slave engine on `db` says hello to `master` on link `peer`, takes every answer and acks.
    @discardableResult
    func connect(_ db: OrderDatabase, to master: MasterEngine, peer: Int, staged: Bool = true) throws -> (SlaveEngine, [String]) {
        let (slave, seen, _) = try join(db, to: master, peer: peer, staged: staged)
        return (slave, seen)
    }

    /// `connect`, also returning what the slave sent besides its hello and ack (its outbox,
    /// undelivered: `deliver` takes it to the master).
    /// `staged: false` takes snapshots whole (a store that does not stage them), as the
    /// simulation's stores do.
    func join(_ db: OrderDatabase, to master: MasterEngine, peer: Int, staged: Bool = true) throws -> (SlaveEngine, [String], [[UInt8]]) {
        let sqlite = SQLiteSlaveStore(db: db)
        let store: any SlaveStore = staged ? sqlite : WholeSnapshotSlaveStore(sqlite)
        let slave = try SlaveEngine(store: store, terminalId: till.nodeId, terminalName: till.name, configuredStore: "s")
        _ = master.peerConnected(peer, address: "x", terminal: till)
        var seen: [String] = []
        var sent: [[UInt8]] = []
        for case .send(let hello) in slave.linkOpened() {
            for bytes in texts(master.received(hello, from: peer, now: 1_000), to: peer) {
                seen.append(String(decoding: bytes, as: UTF8.self))
                for case .send(let s) in slave.received(bytes, now: 1_000) { sent.append(s) }
            }
        }
        for case .send(let ack) in slave.ackDue() { _ = master.received(ack, from: peer, now: 1_000) }
        return (slave, seen, sent)
    }

    func testAWriteHeldOnlyInsideASnapshotIsNotAnsweredReplicated() throws {
        // Q: term 1, op-a..op-c at 1-3.
        let q = try MasterEngine(store: SQLiteMasterStore(db: try OrderDatabase.inMemory()), storeId: "s", epoch: "e")
        for (n, id) in [(1, "op-a"), (2, "op-b"), (3, "op-c")] {
            XCTAssertEqual(q.apply(create(n, opId: id), origin: "q", now: 1).seq, Int64(n))
        }

        // X joins from a snapshot at 3: its journal is empty, its base 3, and its ack holds op-c.
        let x = try OrderDatabase.inMemory()
        let (slave, joined) = try connect(x, to: q, peer: 1)
        XCTAssertTrue(joined.contains { $0.contains("\"snapshot\":") }, "a snapshot, not a catch-up")
        XCTAssertEqual(try x.standbyBase(), 3)
        XCTAssertEqual(try x.journalEntries(after: 0, limit: 10), [])
        XCTAssertEqual(try x.appliedOpIdSeq(opId: "op-c"), 3, "op-c's id came with the snapshot (opIds)")
        XCTAssertEqual(q.standbys.map(\.held), [3])
        XCTAssertEqual(q.standbys.map(\.floor), [3], "the snapshot's seq")
        var waits = ReplicationWaits<String, Int>()
        XCTAssertNil(waits.add(seq: 3, replicas: 1, standbys: q.standbys, deadline: 9, answer: "op-c"), "X's held (3) is a snapshot's")
        XCTAssertEqual(waits.heard(q.standbys).map(\.answer), [])
        let opC = try XCTUnwrap(waits.expired(now: 9).first)
        XCTAssertEqual(opC.answer, "op-c")
        XCTAssertFalse(opC.replicated, "op-c answered replicated:false")

        // op-d: a broadcast X journals; its ack answers op-d replicated.
        let d = q.apply(create(4, opId: "op-d"), origin: "q", now: 2)
        XCTAssertNil(waits.add(seq: 4, replicas: 1, standbys: q.standbys, deadline: 9, answer: "op-d"))
        _ = slave.received(try XCTUnwrap(d.broadcast), now: 2)
        XCTAssertEqual(try x.journalEntries(after: 0, limit: 10).map(\.opId), ["op-d"])
        for case .send(let ack) in slave.ackDue() { _ = q.received(ack, from: 1, now: 2) }
        XCTAssertEqual(q.standbys.map(\.held), [4])
        let opD = try XCTUnwrap(waits.heard(q.standbys).first)
        XCTAssertEqual(opD.answer, "op-d")
        XCTAssertTrue(opD.replicated, "op-d is in X's journal")

        // Q's disk dies. M held op-a only; promoted to term 2 at 2 by M, A and B, it writes op-m.
        let mDB = try OrderDatabase.inMemory()
        let m = try MasterEngine(store: SQLiteMasterStore(db: mDB), storeId: "s", epoch: "e")
        XCTAssertEqual(m.apply(create(1, opId: "op-a"), origin: "q", now: 1).seq, 1)
        m.terms = MasterTerms(term: 2, starts: TermStarts([1: 1, 2: 2]))
        XCTAssertEqual(m.apply(create(9, opId: "op-m"), origin: "m", now: 3).seq, 2)

        // X (term 1 from 1 to 4) says hello to M: they share seq 1 only.
        let (_, answer) = try connect(x, to: m, peer: 1)
        let diverged = try XCTUnwrap(answer.first { $0.contains("\"type\":\"diverged\"") }, "\(answer)")
        XCTAssertTrue(diverged.contains("\"keep\":1"), diverged)

        // Kept: the journal's entry after the base goes back into the outbox and reaches M.
        XCTAssertEqual(try x.outboxEntries().map(\.opId), ["op-d"])
        // Not kept: op-b and op-c (2-3, below the base) are in no journal and no outbox. op-c
        // was answered replicated:false above, so this is the documented loss (7.8), not of a
        // write acknowledged as held by two disks. M's snapshot replaced X's orders.
        XCTAssertNil(try mDB.journalEntry(opId: "op-c"))
        XCTAssertNil(try x.order(uuid: String(format: "7a0b3c4d-5e6f-4a1b-8c2d-%012d", 3)), "op-c's order is gone from X too")
    }
    /// A standby that comes back by catch-up is counted for the seqs the catch-up and the
    /// broadcasts after it bring (journal entries), not for those at or below its hello's
    /// position: this master cannot tell which of those it holds inside an earlier snapshot.
    func testACatchUpCountsTheStandbyAboveItsHellosPosition() throws {
        let q = try MasterEngine(store: SQLiteMasterStore(db: try OrderDatabase.inMemory()), storeId: "s", epoch: "e")
        XCTAssertEqual(q.apply(create(1, opId: "op-a"), origin: "q", now: 1).seq, 1)
        let x = try OrderDatabase.inMemory()
        let (slave, _) = try connect(x, to: q, peer: 1)
        XCTAssertEqual(q.standbys.map(\.floor), [1], "the snapshot's seq")
        let b = q.apply(create(2, opId: "op-b"), origin: "q", now: 2)
        _ = slave.received(try XCTUnwrap(b.broadcast), now: 2)
        _ = q.peerDisconnected(1, now: 2)
        XCTAssertEqual(q.apply(create(3, opId: "op-c"), origin: "q", now: 3).seq, 3)

        let (_, answer) = try connect(x, to: q, peer: 2)
        XCTAssertFalse(answer.contains { $0.contains("\"snapshot\":") }, "a catch-up, not a snapshot: \(answer)")
        XCTAssertEqual(try x.journalEntries(after: 0, limit: 10).map(\.opId), ["op-b", "op-c"])
        XCTAssertEqual(q.standbys.map(\.held), [3])
        XCTAssertEqual(q.standbys.map(\.floor), [2], "the hello's lastSeq")
        var waits = ReplicationWaits<String, Int>()
        XCTAssertEqual(waits.add(seq: 3, replicas: 1, standbys: q.standbys, deadline: 9, answer: "op-c")?.replicated, true)
        XCTAssertNil(waits.add(seq: 2, replicas: 1, standbys: q.standbys, deadline: 9, answer: "op-b"), "at the hello's position")
    }
}
