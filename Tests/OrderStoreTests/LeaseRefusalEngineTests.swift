import Foundation
import JSON
import SyncCore
import XCTest

@testable import OrderStore

/// An operation a master with a lapsed lease cannot hold (its held messages at their bound,
/// `LeaseHeldMessages`) is refused unapplied, as a rate limit is: the slave keeps it in its
/// outbox and sends it again after the wait, and then it is applied once. Real engines on SQLite.
final class LeaseRefusalEngineTests: StoreTestCase {
    func testARefusedOperationStaysInTheOutboxAndIsSentAgain() throws {
        let mDB = try OrderDatabase.inMemory()
        let m = try MasterEngine(store: SQLiteMasterStore(db: mDB), storeId: "s", epoch: "e")
        let x = try OrderDatabase.inMemory()
        let slave = try SlaveEngine(
            store: SQLiteSlaveStore(db: x), terminalId: "TILL-000X-AAAA", terminalName: "till-x", configuredStore: "s")
        _ = m.peerConnected(1, address: "x", terminal: AuthenticatedTerminal(nodeId: "TILL-000X-AAAA", name: "till-x"))
        var pending = slave.linkOpened().compactMap { if case .send(let b) = $0 { return b } else { return nil } }
        while !pending.isEmpty {
            let bytes = pending.removeFirst()
            for case .send(_, let reply) in m.received(bytes, from: 1, now: 1_000) {
                for case .send(let back) in slave.received(reply, now: 1_000) { pending.append(back) }
            }
        }

        let uuid = "7a0b3c4d-5e6f-4a1b-8c2d-000000000001"
        let create = OperationMessage(
            operation: .create, orders: [.object(JSONObject([("uuid", .string(uuid)), ("customerName", .string("Ann"))]))], opId: "op-1")
        let (_, sent) = slave.localWrite(create, opId: "op-1", now: 2_000)
        let op = try XCTUnwrap(sent.compactMap { if case .send(let b) = $0 { return b } else { return nil } }.first)

        // The master cannot hold it: refused, nothing applied.
        let refusal = m.refuseUnheld(op, from: 1, retryAfter: 1000, because: "this master cannot acknowledge writes now")
        let texts = refusal.compactMap { a -> String? in
            if case .send(1, let b) = a { return String(decoding: b, as: UTF8.self) } else { return nil }
        }
        XCTAssertEqual(texts.count, 2, "an error and the result: \(texts)")
        XCTAssertTrue(texts[0].contains("\"rate_limited\"") && texts[0].contains("\"retryAfterMs\":1000"), texts[0])
        XCTAssertTrue(texts[0].contains("send it again in 1000 ms"), texts[0])
        XCTAssertTrue(texts[1].contains("\"type\":\"result\"") && texts[1].contains("\"opId\":\"op-1\""), texts[1])
        XCTAssertEqual(m.lastSeq, 0)
        XCTAssertTrue(m.refuseUnheld(Array(#"{"type":"ack","seq":0}"#.utf8), from: 1, retryAfter: 1000, because: "-").isEmpty)

        var retry: Int64?
        for case .send(1, let bytes) in refusal {
            for action in slave.received(bytes, now: 2_001) {
                if case .scheduleOutboxRetry(let millis) = action { retry = millis }
            }
        }
        XCTAssertEqual(retry, 1000, "the slave sends it again when the master said")
        XCTAssertEqual(try x.outboxEntries().map(\.opId), ["op-1"], "kept in the outbox")

        // Sent again (the lease held by then): applied once.
        var again: [[UInt8]] = []
        for case .send(let b) in slave.retryOutbox() { again.append(b) }
        XCTAssertEqual(again.count, 1)
        for bytes in again {
            for action in m.received(bytes, from: 1, now: 3_000) {
                switch action {
                case .send(1, let reply), .broadcast(let reply, _): _ = slave.received(reply, now: 3_000)
                default: break
                }
            }
        }
        XCTAssertEqual(m.lastSeq, 1)
        XCTAssertEqual(try mDB.journalEntry(opId: "op-1")?.seq, 1)
        XCTAssertEqual(try x.outboxEntries(), [], "answered")
    }
}
