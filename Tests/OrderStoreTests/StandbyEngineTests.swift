import Foundation
import JSON
import SyncCore
import XCTest

@testable import OrderStore

/// The engines' standby copy on SQLite (`Docs/PROTOCOL.md` 7): what a slave keeps with each
/// broadcast, members, refusals, terms, divergence and a stale master.
final class StandbyEngineTests: StoreTestCase {
    let terminal = AuthenticatedTerminal(nodeId: "TILL-0001-AAAA", name: "till-1")
    private let key = String(repeating: "ab", count: 32)

    func uuid(_ n: Int) -> String { String(format: "9437c8f5-d742-46cb-9847-%012d", n) }

    func create(_ uuids: [String], opId: String? = nil) -> OperationMessage {
        OperationMessage(
            operation: .create, orders: uuids.map { .object(JSONObject([("uuid", .string($0)), ("customerName", .string("c"))])) },
            opId: opId)
    }

    func sends(_ actions: [MasterEngine.Action], to peer: Int) -> [String] {
        actions.compactMap {
            switch $0 {
            case .send(let p, let bytes) where p == peer: return String(decoding: bytes, as: UTF8.self)
            case .broadcast(let bytes, let peers) where peers.contains(peer): return String(decoding: bytes, as: UTF8.self)
            default: return nil
            }
        }
    }

    /// A slave on `db`, joined to `master` through its hello (snapshot or catch-up).
    func join(_ master: MasterEngine, peer: Int = 1, on db: OrderDatabase) throws -> (SlaveEngine, [String]) {
        let slave = try SlaveEngine(
            store: SQLiteSlaveStore(db: db), terminalId: terminal.nodeId, terminalName: "till-1", configuredStore: "s")
        _ = master.peerConnected(peer, address: "a", terminal: terminal)
        var texts: [String] = []
        for case .send(let hello) in slave.linkOpened() {
            texts = sends(master.received(hello, from: peer, now: 1_000), to: peer)
            for t in texts { _ = slave.received(Array(t.utf8), now: 1_000) }
        }
        return (slave, texts)
    }

    func testABroadcastAppliedOnASlaveIsJournalledWithItsTermAndTombstones() throws {
        let master = try MasterEngine(store: SQLiteMasterStore(db: .inMemory()), storeId: "s", epoch: "e")
        let db = try OrderDatabase.inMemory()
        let (slave, joined) = try join(master, on: db)
        XCTAssertTrue(joined.last?.contains("\"term\":1") == true, "ready carries the term: \(joined)")
        let a = master.apply(create([uuid(1), uuid(2)], opId: "op-a"), origin: "t2", now: 2_000)
        XCTAssertTrue(String(decoding: try XCTUnwrap(a.broadcast), as: UTF8.self).contains("\"term\":1"))
        _ = slave.received(try XCTUnwrap(a.broadcast), now: 2_000)
        let remove = OperationMessage(operation: .remove, orders: [.object(JSONObject([("uuid", .string(uuid(1)))]))])
        let r = master.apply(remove, origin: "t2", now: 3_000)
        _ = slave.received(try XCTUnwrap(r.broadcast), now: 3_000)
        let journal = try db.journalEntries(after: 0, limit: 10)
        XCTAssertEqual(journal.map(\.seq), [1, 2])
        XCTAssertEqual(journal.map(\.opId), ["op-a", nil])
        XCTAssertEqual(journal.first?.message, a.broadcast, "the broadcast as received")
        XCTAssertEqual(journal.map(\.term), [1, 1])
        XCTAssertTrue(try db.hasTombstone(uuid: uuid(1)))
        XCTAssertEqual(try db.journalEntry(opId: "op-a")?.seq, 1, "a promoted master finds the op id")
        // A snapshot records its base; of the lineage the slave followed, it keeps the journal's
        // entries above the stable seq (none heard: 0) below that base (7.19), outside the
        // gapless journal a catch-up or a fetch reads.
        XCTAssertEqual(slave.lastTerm, 1)
        let (again, _) = try join(
            master, peer: 2,
            on: {
                try db.setMetadata("replica.needs_snapshot", "1"); return db
            }())
        XCTAssertEqual(again.lastSeq, 2)
        XCTAssertEqual(try db.journalEntries(after: 0, limit: 10).map(\.seq), [1, 2])
        XCTAssertNil(try db.firstJournalSeq())
        XCTAssertEqual(try db.standbyBase(), 2)
    }

    func testMembersAndRefusalsAreStoredOnTheStandby() throws {
        let master = try MasterEngine(store: SQLiteMasterStore(db: .inMemory()), storeId: "s", epoch: "e")
        let members = StoreMembers(
            term: 1, master: StoreMember(id: "MAIN", key: key, name: "main"),
            terminals: [
                MemberTerminal(
                    member: StoreMember(id: terminal.nodeId, key: String(repeating: "cd", count: 32), name: "till-1"), pairedMillis: 5)
            ],
            settings: JSONObject([("storePOS", .bool(false))]))
        _ = master.membersChanged(members)
        let db = try OrderDatabase.inMemory()
        let (_, joined) = try join(master, on: db)
        XCTAssertTrue(joined.last?.hasPrefix("{\"type\":\"members\"") == true, "members follow ready: \(joined)")
        XCTAssertEqual(try db.standbyMaster(), members.master)
        XCTAssertEqual(try db.memberTerminals(), members.terminals)
        XCTAssertEqual(try db.standbySettings(), members.settings)
        // Another terminal's operation refused in part: the standby keeps the refusal.
        _ = try join(master, peer: 7, on: .inMemory())
        XCTAssertEqual(master.apply(create([uuid(3)]), origin: "x", now: 1).seq, 1)
        let update = OperationMessage(
            operation: .update, orders: [.object(JSONObject([("uuid", .string(uuid(9))), ("customerName", .string("d"))]))], opId: "op-dup")
        let out = master.received(update.encodedBytes(), from: 7, now: 2)
        let refused = sends(out, to: 1).filter { $0.contains("\"type\":\"refused\"") }
        XCTAssertEqual(refused.count, 1, "\(sends(out, to: 1))")
        XCTAssertTrue(sends(out, to: 7).allSatisfy { !$0.contains("\"type\":\"refused\"") }, "the sender gets its own errors")
    }

    func testARefusedMessageOnTheStandbyAnswersARetryAfterPromotion() throws {
        let db = try OrderDatabase.inMemory()
        let slave = try SlaveEngine(store: SQLiteSlaveStore(db: db), terminalId: "t", terminalName: "t", configuredStore: "s")
        let error = WireError(.alreadyExists, "taken", uuid: uuid(3))
        _ = slave.received(StandbyMessage.refused(opId: "op-dup", origin: "till-2", term: 1, errors: [error]).encodedBytes(), now: 9)
        let rejections = try SQLiteMasterStore(db: db).rejections(opId: "op-dup")
        XCTAssertEqual(rejections.map(\.code), [.alreadyExists])
        XCTAssertEqual(rejections.map(\.orderUUID), [uuid(3)])
        XCTAssertEqual(rejections.map(\.origin), ["till-2"])
    }

    func testAHelloOfAHigherTermMakesTheMasterStepDown() throws {
        let master = try MasterEngine(store: SQLiteMasterStore(db: .inMemory()), storeId: "s", epoch: "e")
        _ = master.peerConnected(1, address: "a", terminal: terminal)
        var hello = HelloMessage(terminalId: terminal.nodeId, terminalName: "till-1", store: "s", lastSeq: 0, epoch: "e")
        hello.term = 3
        let out = master.received(hello.encodedBytes(), from: 1, now: 1)
        XCTAssertTrue(out.contains(.stepDown(term: 3)))
        XCTAssertTrue(sends(out, to: 1).first?.contains("\"code\":\"stale_master\"") == true)
        XCTAssertTrue(out.contains { if case .close(1, MasterEngine.policyViolation, _) = $0 { return true } else { return false } })
        // A StorePOS app (no paired key) cannot end the reign by saying a term.
        _ = master.peerConnected(3, address: "c", terminal: nil)
        XCTAssertFalse(master.received(hello.encodedBytes(), from: 3, now: 1).contains(.stepDown(term: 3)))
        // The same term is no news.
        _ = master.peerConnected(2, address: "b", terminal: terminal)
        hello.term = 1
        XCTAssertFalse(master.received(hello.encodedBytes(), from: 2, now: 1).contains(.stepDown(term: 1)))
    }

    func testABroadcastOfAnEndedTermIsIgnored() throws {
        let db = try OrderDatabase.inMemory()
        try db.setTerm(2)
        try db.addTermStart(term: 2, seq: 3)
        try db.setMetadata("replica.last_seq", "2")
        let slave = try SlaveEngine(store: SQLiteSlaveStore(db: db), terminalId: "t", terminalName: "t", configuredStore: "s")
        func broadcast(seq: Int64, term: Int64) -> [UInt8] {
            var o = ServerMessage.applied(
                operation: .create, orders: [Order(uuid: uuid(Int(seq)), customerName: "c", created: OrderTimestamp(epochMillis: 1))],
                seq: seq, opId: nil, origin: "x", snapshot: nil
            ).jsonObject()
            o["term"] = .int(term)
            return JSONValue.object(o).serializedBytes()
        }
        let stale = slave.received(broadcast(seq: 3, term: 1), now: 1)
        XCTAssertTrue(stale.contains { if case .log(let l) = $0 { return l.event == "sync.stale_term" } else { return false } })
        XCTAssertEqual(slave.lastSeq, 2)
        XCTAssertNil(try db.order(uuid: uuid(3)))
        _ = slave.received(broadcast(seq: 3, term: 2), now: 1)
        XCTAssertEqual(slave.lastSeq, 3)
        XCTAssertEqual(try db.journalEntry(seq: 3)?.term, 2)
    }

    func testADivergedSlaveRequeuesItsTailOnceAndTakesTheSnapshot() throws {
        // The old master's file, now a slave: entries 1...3 of term 1; the new master (term 2)
        // began at 3, so entry 3 is not in its history.
        let old = try OrderDatabase.inMemory()
        let oldMaster = try MasterEngine(store: SQLiteMasterStore(db: old), storeId: "s", epoch: "e")
        for (i, id) in ["op-1", "op-2"].enumerated() {
            XCTAssertNotNil(oldMaster.apply(create([uuid(i + 1)], opId: id), origin: "t", now: 1).seq)
        }
        XCTAssertNotNil(oldMaster.apply(create([uuid(3)]), origin: "t", now: 1).seq)
        try old.setMetadata("replica.last_seq", "3")
        try old.setMetadata("replica.epoch", "e")
        try old.setMetadata("replica.store", "s")
        let newDB = try OrderDatabase.inMemory()
        for e in try old.journalEntries(after: 0, limit: 2) { try newDB.appendJournal(e) }
        try newDB.applyFetchedEntries([])
        for o in try old.allOrders().prefix(2) { try newDB.insertOrder(o) }
        try newDB.becomeMasterFromStandby(term: 2, lineage: "e", oldMaster: nil)
        let newMaster = try MasterEngine(store: SQLiteMasterStore(db: newDB), storeId: "s", epoch: "e")
        XCTAssertEqual(newMaster.terms.term, 2)
        XCTAssertNotNil(newMaster.apply(create([uuid(4)]), origin: "t9", now: 1).seq)
        // A pending local change with a requeue id already in the outbox is not queued twice.
        let slave = try SlaveEngine(
            store: SQLiteSlaveStore(db: old), terminalId: terminal.nodeId, terminalName: "till-1", configuredStore: "s")
        _ = newMaster.peerConnected(1, address: "a", terminal: terminal)
        var texts: [String] = []
        for case .send(let hello) in slave.linkOpened() {
            XCTAssertTrue(String(decoding: hello, as: UTF8.self).contains("\"lastTerm\":1"))
            texts = sends(newMaster.received(hello, from: 1, now: 1), to: 1)
        }
        XCTAssertTrue(texts.first?.contains("{\"type\":\"diverged\",\"keep\":2,\"term\":2}") == true, "\(texts)")
        for t in texts { _ = slave.received(Array(t.utf8), now: 1) }
        XCTAssertEqual(slave.outbox.map(\.opId), ["requeue-1-3"], "one op id per entry")
        XCTAssertEqual(slave.lastSeq, 3)
        XCTAssertEqual(slave.term, 2)
        XCTAssertNotNil(try old.order(uuid: uuid(3)), "the requeued order stays on top of the snapshot")
        XCTAssertNotNil(try old.order(uuid: uuid(4)))
        XCTAssertEqual(
            try old.journalEntries(after: 0, limit: 10).map(\.seq), [1, 2], "the shared entries stay, below the snapshot's base (7.19)")
        XCTAssertNil(try old.firstJournalSeq(), "nothing above the base")
    }
}
