import Foundation
import JSON
import SyncCore
import XCTest

@testable import OrderStore

/// `diverged` below a standby's snapshot base (`Docs/PROTOCOL.md` 7.19): the entries between
/// `keep` and the base are in the node's orders only, not in its journal, so they cannot go back
/// into its outbox. Real engines on SQLite: the case built step by step, and what is kept and
/// what is lost asserted.
///
/// Five voters: master Q (term 1), standbys X, M, A, B. X joins Q from a snapshot at 3 and so
/// holds Q's local write op-c (seq 3) only inside that snapshot; its ack (`held` 3) is what
/// answers op-c `"replicated":true`. Q writes op-d (seq 4), which X journals. Q's disk dies; M,
/// A and B (cut off since seq 1) are a majority and promote M to term 2 without X. X then says
/// hello to M.
final class DivergenceBelowSnapshotBaseTests: StoreTestCase {
    private let till = AuthenticatedTerminal(nodeId: "TILL-000X-AAAA", name: "till-x")

    private func create(_ n: Int, opId: String) -> OperationMessage {
        let uuid = String(format: "7a0b3c4d-5e6f-4a1b-8c2d-%012d", n)
        return OperationMessage(
            operation: .create, orders: [.object(JSONObject([("uuid", .string(uuid)), ("customerName", .string("c\(n)"))]))], opId: opId)
    }

    private func texts(_ actions: [MasterEngine.Action], to peer: Int) -> [[UInt8]] {
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
    private func connect(_ db: OrderDatabase, to master: MasterEngine, peer: Int) throws -> (SlaveEngine, [String]) {
        let slave = try SlaveEngine(store: SQLiteSlaveStore(db: db), terminalId: till.nodeId, terminalName: till.name, configuredStore: "s")
        _ = master.peerConnected(peer, address: "x", terminal: till)
        var seen: [String] = []
        for case .send(let hello) in slave.linkOpened() {
            for bytes in texts(master.received(hello, from: peer, now: 1_000), to: peer) {
                seen.append(String(decoding: bytes, as: UTF8.self))
                _ = slave.received(bytes, now: 1_000)
            }
        }
        for case .send(let ack) in slave.ackDue() { _ = master.received(ack, from: peer, now: 1_000) }
        return (slave, seen)
    }

    func testEntriesBetweenKeepAndTheSnapshotBaseCannotBeRequeued() throws {
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
        var waits = ReplicationWaits<String, Int>()
        let opC = try XCTUnwrap(waits.add(seq: 3, replicas: 1, standbys: q.standbys, deadline: 9, answer: "op-c"))
        XCTAssertTrue(opC.replicated, "op-c answered replicated: X's held (3) counts a snapshot's seqs")

        // op-d: a broadcast X journals.
        let d = q.apply(create(4, opId: "op-d"), origin: "q", now: 2)
        _ = slave.received(try XCTUnwrap(d.broadcast), now: 2)
        XCTAssertEqual(try x.journalEntries(after: 0, limit: 10).map(\.opId), ["op-d"])

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
        // Lost: op-b and op-c (2-3, below the base) are in no journal and no outbox; op-c was
        // answered replicated. M's snapshot replaced X's orders.
        XCTAssertNil(try mDB.journalEntry(opId: "op-c"))
        XCTAssertNil(try x.order(uuid: String(format: "7a0b3c4d-5e6f-4a1b-8c2d-%012d", 3)), "op-c's order is gone from X too")
    }
}
