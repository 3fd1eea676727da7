import Foundation
import JSON
import OrderStore
import SyncCore
import WireTestSupport
import XCTest

@testable import OrderSyncNode

/// A bulk operation on the real stores: its broadcast goes out in parts a slave applies as one
/// operation, a catch-up too large to send at once becomes a snapshot, and an operation whose
/// broadcast would outgrow the bound is refused with nothing stored.
final class BulkBroadcastTests: XCTestCase {
    var dir: String!
    /// A part bound small enough for a few dozen orders to need several parts.
    let partBytes = 128 << 10

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "ordersync-bulk-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// The master and a slave that took its (empty) snapshot, and `uuids` orders of about 10 KB
    /// created on the master and applied by the slave one message at a time.
    func synced(orders count: Int) throws -> (MasterEngine, OrderDatabase, SlaveEngine, OrderDatabase, [String]) {
        let mdb = try OrderDatabase(path: dir + "/m.sqlite")
        let master = try MasterEngine(store: SQLiteMasterStore(db: mdb), storeId: "s", epoch: "e")
        master.broadcastPartBytes = partBytes
        let sdb = try OrderDatabase(path: dir + "/s.sqlite")
        let slave = try SlaveEngine(store: SQLiteSlaveStore(db: sdb), terminalId: "t", terminalName: "bar", configuredStore: "s")
        converse(slave, master, now: 1)
        let uuids = (0..<count).map { _ in UUID().uuidString.lowercased() }
        for u in uuids {
            // A note (at most 4 KiB) and an unknown member make an order of about 10 KB.
            let note = String(repeating: "x", count: 4_000)
            let ticket = String(repeating: "t", count: 6_000)
            let create = OperationMessage(
                operation: .create,
                orders: [
                    .object(
                        JSONObject([
                            ("uuid", .string(u)), ("customerName", .string("A")), ("note", .string(note)),
                            ("x-ticket", .string(ticket)),
                        ]))
                ])
            let (_, actions) = master.localWrite(create, origin: "m", now: 2)
            for t in texts(actions, to: 1) { _ = slave.received(t, now: 2) }
        }
        XCTAssertEqual(slave.lastSeq, Int64(count))
        return (master, mdb, slave, sdb, uuids)
    }

    /// One Update renaming every order in `uuids`.
    func rename(_ uuids: [String], to name: String, opId: String? = "op-bulk") -> OperationMessage {
        OperationMessage(
            operation: .update, orders: uuids.map { .object(JSONObject([("uuid", .string($0)), ("customerName", .string(name))])) },
            opId: opId)
    }

    func texts(_ actions: [MasterEngine.Action], to peer: Int) -> [String] { actions.texts(to: peer) }

    func logs(_ actions: [MasterEngine.Action]) -> [String] {
        actions.compactMap { a -> String? in
            if case .log(let r) = a { return r.event }
            return nil
        }
    }

    /// The slave connects (peer 1) and the two exchange messages until neither has more to say.
    func converse(_ slave: SlaveEngine, _ master: MasterEngine, now: Int64) {
        var masterActions: [MasterEngine.Action] = []
        var toMaster = slave.linkOpened().compactMap { a -> String? in
            if case .send(let t) = a { return t.text }; return nil
        }
        _ = master.peerConnected(1, address: "10.0.0.2:5000", terminal: AuthenticatedTerminal(nodeId: "t", name: "bar"))
        while !toMaster.isEmpty {
            let actions = toMaster.flatMap { master.received($0, from: 1, now: now) }
            masterActions += actions
            toMaster = texts(actions, to: 1).flatMap { t in
                slave.received(t, now: now).compactMap { a -> String? in
                    if case .send(let m) = a { return m.text }; return nil
                }
            }
        }
        lastConversation = masterActions
    }
    var lastConversation: [MasterEngine.Action] = []

    func testABulkUpdateGoesOutInPartsEachWithinTheBoundAndASlaveAppliesThemAsOneOperation() throws {
        let (master, _, slave, sdb, uuids) = try synced(orders: 60)
        let feedBefore = try sdb.feedBounds().last
        let (outcome, actions) = master.localWrite(rename(uuids, to: "Party"), origin: "m", now: 3)
        XCTAssertEqual(outcome.errors, [])
        XCTAssertEqual(outcome.seq, 61)
        let parts = texts(actions, to: 1)
        XCTAssertGreaterThan(parts.count, 3)
        XCTAssertTrue(logs(actions).contains("broadcast.parts"))
        for (k, text) in parts.enumerated() {
            XCTAssertLessThanOrEqual(text.utf8.count, partBytes)
            guard case .success(.applied(.update, _, let seq, let opId, _, nil, let part)) = ServerMessage.decode(text) else {
                return XCTFail("part \(k + 1) is not an applied update")
            }
            XCTAssertEqual(seq, 61)
            XCTAssertEqual(opId, "op-bulk")
            XCTAssertEqual(part, BroadcastPart(part: k + 1, parts: parts.count))
        }
        for text in parts.dropLast() {
            XCTAssertEqual(slave.received(text, now: 3).filter { if case .resync = $0 { return true } else { return false } }, [])
        }
        XCTAssertEqual(slave.lastSeq, 60, "nothing applied before the last part")
        XCTAssertEqual(try sdb.order(uuid: uuids[0])?.customerName, "A")
        _ = slave.received(parts[parts.count - 1], now: 3)
        XCTAssertEqual(slave.lastSeq, 61)
        for u in uuids { XCTAssertEqual(try sdb.order(uuid: u)?.customerName, "Party") }
        XCTAssertEqual(try sdb.feed(after: feedBefore, limit: 10).count, 1, "one change in the feed for the operation")
        // The journal keeps the operation as one entry.
        XCTAssertEqual(try master.store.journal(since: 60, limit: 10).map(\.seq), [61])
    }

    func testTheSlavesOwnBulkUpdateSettlesAtTheLastPartAndARetryGetsTheAnswerInPartsAgain() throws {
        let (master, _, slave, sdb, uuids) = try synced(orders: 40)
        let (_, written) = slave.localWrite(rename(uuids, to: "Party", opId: nil), opId: "op-mine", now: 3)
        let sent = written.compactMap { a -> String? in
            if case .send(let t) = a { return t.text }; return nil
        }
        XCTAssertEqual(sent.count, 1)
        XCTAssertEqual(try sdb.outboxCount(), 1)
        let answer = master.received(sent[0], from: 1, now: 3).texts(to: 1)
        XCTAssertGreaterThan(answer.count, 3, "the broadcast in parts, then result")
        for text in answer.dropLast(2) { _ = slave.received(text, now: 3) }
        XCTAssertEqual(try sdb.outboxCount(), 1, "still waiting before the last part")
        _ = slave.received(answer[answer.count - 2], now: 3)
        XCTAssertEqual(try sdb.outboxCount(), 0, "settled with the last part, before the result")
        _ = slave.received(answer[answer.count - 1], now: 3)
        XCTAssertEqual(slave.lastSeq, 41)
        // The same operation id again (an answer lost with the link): the first answer, in parts.
        let again = master.received(sent[0], from: 1, now: 4)
        XCTAssertTrue(logs(again).contains("op.repeat"))
        let repeated = again.texts(to: 1)
        XCTAssertEqual(repeated.count, answer.count)
        XCTAssertTrue(repeated.allSatisfy { $0.utf8.count <= partBytes })
        XCTAssertEqual(master.lastSeq, 41, "not applied twice")
    }

    func testPartsOutOfOrderOrInterruptedAreRefusedAndNothingIsApplied() throws {
        let (master, _, slave, sdb, uuids) = try synced(orders: 40)
        let (_, actions) = master.localWrite(rename(uuids, to: "Party"), origin: "m", now: 3)
        let parts = texts(actions, to: 1)
        XCTAssertGreaterThan(parts.count, 2)
        func resyncs(_ a: [SlaveEngine.Action]) -> Bool { a.contains { if case .resync = $0 { return true } else { return false } } }
        // The second part first.
        XCTAssertTrue(resyncs(slave.received(parts[1], now: 3)))
        // The first, then the third (the second lost).
        slave.linkClosed()
        _ = slave.linkOpened()
        XCTAssertFalse(resyncs(slave.received(parts[0], now: 3)))
        XCTAssertTrue(resyncs(slave.received(parts[2], now: 3)))
        // The first, then a heartbeat between the parts.
        XCTAssertFalse(resyncs(slave.received(parts[0], now: 3)))
        XCTAssertTrue(resyncs(slave.received(ServerMessage.heartbeat(seq: 41).encoded(), now: 3)))
        // The first twice.
        XCTAssertFalse(resyncs(slave.received(parts[0], now: 3)))
        XCTAssertTrue(resyncs(slave.received(parts[0], now: 3)))
        // A part of another sequence in the middle.
        XCTAssertFalse(resyncs(slave.received(parts[0], now: 3)))
        let other = parts[1].replacingOccurrences(of: #""seq":41"#, with: #""seq":42"#)
        XCTAssertNotEqual(other, parts[1])
        XCTAssertTrue(resyncs(slave.received(other, now: 3)))
        XCTAssertEqual(slave.lastSeq, 40)
        XCTAssertEqual(try sdb.order(uuid: uuids[0])?.customerName, "A", "nothing applied")
        // A parts' total over the slave's bound.
        slave.maxBroadcastPartsBytes = partBytes
        XCTAssertFalse(resyncs(slave.received(parts[0], now: 3)))
        XCTAssertTrue(resyncs(slave.received(parts[1], now: 3)))
        XCTAssertEqual(slave.lastSeq, 40)
    }

    func testACatchUpWithinItsBudgetSendsTheBulkOperationInParts() throws {
        let (master, _, slave, sdb, uuids) = try synced(orders: 30)
        slave.linkClosed()
        _ = master.peerDisconnected(1, now: 3)
        _ = master.localWrite(rename(uuids, to: "Party"), origin: "m", now: 3)
        let missed = try XCTUnwrap(master.catchUp(from: 30, epoch: "e"))
        XCTAssertGreaterThan(missed.count, 1, "the operation in parts")
        XCTAssertTrue(missed.allSatisfy { $0.count <= partBytes })
        converse(slave, master, now: 4)
        XCTAssertTrue(logs(lastConversation).contains("catchup.sent"))
        XCTAssertEqual(slave.lastSeq, 31)
        XCTAssertEqual(try sdb.order(uuid: uuids[29])?.customerName, "Party")
    }

    func testACatchUpOverItsByteBudgetFallsBackToASnapshot() throws {
        let (master, _, slave, sdb, uuids) = try synced(orders: 30)
        slave.linkClosed()
        _ = master.peerDisconnected(1, now: 3)
        _ = master.localWrite(rename(uuids, to: "Party"), origin: "m", now: 3)
        master.maxCatchUpBytes = 200 << 10
        XCTAssertNil(try master.catchUp(from: 30, epoch: "e"), "over the budget: a snapshot instead")
        converse(slave, master, now: 4)
        let events = logs(lastConversation)
        XCTAssertTrue(events.contains("catchup.over_budget"), "\(events)")
        XCTAssertTrue(events.contains("snapshot.sent"), "\(events)")
        XCTAssertFalse(events.contains("catchup.sent"), "\(events)")
        XCTAssertEqual(slave.lastSeq, 31)
        for u in uuids { XCTAssertEqual(try sdb.order(uuid: u)?.customerName, "Party") }
    }

    func testAnOperationWhoseBroadcastWouldOutgrowTheBoundIsRefusedWholeWithNothingApplied() throws {
        let (master, mdb, _, _, uuids) = try synced(orders: 30)
        master.maxBroadcastBytes = 200 << 10
        let (outcome, actions) = master.localWrite(rename(uuids, to: "Party"), origin: "m", now: 3)
        XCTAssertNil(outcome.seq)
        XCTAssertEqual(outcome.errors.map(\.code), [.tooLarge])
        let message = try XCTUnwrap(outcome.errors.first?.message)
        XCTAssertTrue(message.contains("send fewer orders per message"), message)
        XCTAssertTrue(message.contains("\(200 << 10)"), message)
        // The standby keeps the refusal (a promoted master answers a retry with it); nothing else.
        XCTAssertEqual(texts(actions, to: 1).map { $0.hasPrefix("{\"type\":\"refused\"") }, [true], "nothing broadcast")
        XCTAssertEqual(master.lastSeq, 30)
        XCTAssertEqual(try mdb.lastJournalSeq(), 30)
        XCTAssertEqual(try mdb.order(uuid: uuids[0])?.customerName, "A", "nothing applied")
        XCTAssertEqual(try mdb.order(uuid: uuids[0])?.version, 1)
        // Fewer orders per message go through.
        let (half, _) = master.localWrite(rename(Array(uuids.prefix(10)), to: "Party", opId: "op-half"), origin: "m", now: 4)
        XCTAssertEqual(half.errors, [])
        XCTAssertEqual(half.seq, 31)
    }
}

extension [MasterEngine.Action] {
    /// The texts these actions send to `peer` (its own messages and the broadcasts it is among),
    /// in order.
    func texts(to peer: Int) -> [String] {
        compactMap { a -> String? in
            switch a {
            case .send(peer, let t): return t.text
            case .broadcast(let t, let peers) where peers.contains(peer): return t.text
            default: return nil
            }
        }
    }
}
