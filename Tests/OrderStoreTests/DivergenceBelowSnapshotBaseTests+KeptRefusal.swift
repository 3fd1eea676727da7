import Foundation
import JSON
import SyncCore
import XCTest

@testable import OrderStore

/// A write kept through a snapshot as this standby sent it (`Docs/PROTOCOL.md` 7.19) holds the
/// orders the old master refused too: the snapshot's `applied` names the operation, not which
/// of its orders went in. Re-queued on `diverged` below the base, it goes to the new master as
/// sent, and the new master judges each order again against its own orders, as any operation:
/// it refuses again what its history refuses, and applies what its history allows.
extension DivergenceBelowSnapshotBaseTests {
    private func uuid(_ n: Int) -> String { String(format: "7a0b3c4d-5e6f-4a1b-8c2d-%012d", n) }

    private func update(_ ns: [Int], opId: String) -> OperationMessage {
        OperationMessage(
            operation: .update,
            orders: ns.map { .object(JSONObject([("uuid", .string(uuid($0))), ("customerName", .string("x\($0)"))])) }, opId: opId)
    }

    private func remove(_ n: Int, opId: String) -> OperationMessage {
        OperationMessage(operation: .remove, orders: [.object(JSONObject([("uuid", .string(uuid(n)))]))], opId: opId)
    }

    /// Q (term 1) creates orders 1 and 2; X joins from a snapshot at 2. Q removes order 1 (op-r,
    /// 3; X does not hear of it), then applies X's op-x (update orders 1 and 2) at 4: order 2
    /// goes in, order 1 is refused `not_found`; the answer is lost. Q's snapshot at 5 answers
    /// op-x, which X keeps as it sent it, both orders. M, promoted to term 2 at 3 without X or
    /// Q, gets it back on `diverged keep=2`: when M removed order 1 too it refuses it again,
    /// when M still has order 1 it applies it.
    func testAKeptOwnWriteGoesBackWithTheOrdersTheOldMasterRefused() throws {
        for (staged, mRemoves) in [(true, true), (true, false), (false, true), (false, false)] {
            let q = try MasterEngine(store: SQLiteMasterStore(db: try OrderDatabase.inMemory()), storeId: "s", epoch: "e")
            XCTAssertEqual(q.apply(create(1, opId: "op-a"), origin: "q", now: 1).seq, 1)
            XCTAssertEqual(q.apply(create(2, opId: "op-b"), origin: "q", now: 1).seq, 2)
            let x = try OrderDatabase.inMemory()
            let (slave, _) = try connect(x, to: q, peer: 1, staged: staged)
            XCTAssertEqual(q.apply(remove(1, opId: "op-r"), origin: "q", now: 2).seq, 3)
            let (_, sent) = slave.localWrite(update([1, 2], opId: "op-x"), opId: "op-x", now: 1_000)
            var answers: [String] = []
            for case .send(let bytes) in sent {
                answers += texts(q.received(bytes, from: 1, now: 1_000), to: 1).map { String(decoding: $0, as: UTF8.self) }
            }
            XCTAssertTrue(answers.contains { $0.contains("\"not_found\"") && $0.contains(uuid(1)) }, "Q refused order 1: \(answers)")
            XCTAssertEqual(q.lastSeq, 4, "and applied order 2 at 4")
            _ = q.peerDisconnected(1, now: 1_000)
            XCTAssertEqual(q.apply(create(5, opId: "op-c"), origin: "q", now: 3).seq, 5)
            q.maxCatchUpEntries = 1
            let (_, snapshot) = try connect(x, to: q, peer: 2, staged: staged)
            XCTAssertTrue(snapshot.contains { $0.contains("\"op-x\":4") }, "\(snapshot)")
            let kept = try XCTUnwrap(try x.journalEntry(opId: "op-x"))
            XCTAssertEqual(kept.seq, 4)
            XCTAssertEqual(kept.orderUUIDs, [uuid(1), uuid(2)], "kept as X sent it, the refused order 1 included")

            // M shares 1-2 with Q; term 2 begins at 3 with op-m.
            let mDB = try OrderDatabase.inMemory()
            let m = try MasterEngine(store: SQLiteMasterStore(db: mDB), storeId: "s", epoch: "e")
            XCTAssertEqual(m.apply(create(1, opId: "op-a"), origin: "q", now: 1).seq, 1)
            XCTAssertEqual(m.apply(create(2, opId: "op-b"), origin: "q", now: 1).seq, 2)
            m.terms = MasterTerms(term: 2, starts: TermStarts([1: 1, 2: 3]))
            let opM = mRemoves ? remove(1, opId: "op-m") : create(9, opId: "op-m")
            XCTAssertEqual(m.apply(opM, origin: "m", now: 3).seq, 3)

            let (again, answer, requeued) = try join(x, to: m, peer: 3, staged: staged)
            XCTAssertTrue(answer.contains { $0.contains("\"type\":\"diverged\"") && $0.contains("\"keep\":2") }, "\(answer)")
            XCTAssertEqual(try x.outboxEntries().map(\.opId), ["op-x"], "re-queued as sent")
            var replies: [String] = []
            for bytes in requeued {
                for reply in texts(m.received(bytes, from: 3, now: 1_000), to: 3) {
                    replies.append(String(decoding: reply, as: UTF8.self))
                    _ = again.received(reply, now: 1_000)
                }
            }
            let journalled = try XCTUnwrap(try mDB.journalEntry(opId: "op-x"), "M applied op-x")
            XCTAssertEqual(try x.outboxEntries(), [], "answered by M")
            XCTAssertEqual(try mDB.order(uuid: uuid(2))?.customerName, "x2")
            if mRemoves {
                XCTAssertEqual(journalled.orderUUIDs, [uuid(2)], "M refuses order 1 again")
                XCTAssertTrue(replies.contains { $0.contains("\"not_found\"") && $0.contains(uuid(1)) }, "\(replies)")
                XCTAssertNil(try mDB.order(uuid: uuid(1)))
            } else {
                XCTAssertEqual(journalled.orderUUIDs, [uuid(1), uuid(2)], "M applies what Q refused: its history has order 1")
                XCTAssertEqual(try mDB.order(uuid: uuid(1))?.customerName, "x1")
            }
        }
    }
}
