import Foundation
import JSON
import SyncCore
import XCTest

@testable import OrderStore

/// The master and slave engines on their SQLite stores, at the edges the mutation run
/// (Docs/MUTANTS.md) found unguarded: what a terminal acknowledges while its outbox is not
/// empty, what a catch-up sends, and what a slave that must start again keeps on disk.
final class EngineEdgeTests: StoreTestCase {
    /// A create of one order per uuid, each for `customer`.
    private func create(_ uuids: [String], customer: String = "c") -> OperationMessage {
        OperationMessage(
            operation: .create,
            orders: uuids.map { .object(JSONObject([("uuid", .string($0)), ("customerName", .string(customer))])) })
    }

    /// A master on an in-memory store, with `count` orders applied from terminal `t2`.
    private func master(applied count: Int) throws -> MasterEngine {
        let master = try MasterEngine(store: SQLiteMasterStore(db: .inMemory()), storeId: "s", epoch: "e")
        for _ in 0..<count {
            XCTAssertNotNil(master.apply(create([UUID().uuidString.lowercased()]), origin: "t2", now: 1_000).seq)
        }
        return master
    }

    /// A slave on `db` that has joined `master` through its snapshot, its link live.
    private func joinedSlave(_ master: MasterEngine, on db: OrderDatabase) throws -> SlaveEngine {
        let slave = try SlaveEngine(store: SQLiteSlaveStore(db: db), terminalId: "t", terminalName: "bar", configuredStore: "s")
        _ = slave.linkOpened()
        for text in try master.snapshotMessages().messages { _ = slave.received(text, now: 1_000) }
        _ = slave.received(ServerMessage.ready(seq: master.lastSeq, epoch: "e", store: "s").encoded(), now: 1_000)
        XCTAssertEqual(slave.lastSeq, master.lastSeq)
        return slave
    }

    /// A terminal a little behind gets the journal entries it missed, each one as the
    /// broadcast was, not the whole snapshot (which a gapless journal makes unnecessary).
    func testACatchUpWithinTheJournalSendsTheMissedEntries() throws {
        let master = try master(applied: 3)
        let entries = try XCTUnwrap(master.catchUp(from: 1, epoch: "e"), "a gapless journal serves a catch-up")
        XCTAssertEqual(entries.count, 2)
        let seqs = entries.compactMap { text -> Int64? in
            if case .success(.applied(_, _, let seq, _, _, _, _)) = ServerMessage.decode(text) { return seq }
            return nil
        }
        XCTAssertEqual(seqs, [2, 3])
        XCTAssertEqual(try master.catchUp(from: 3, epoch: "e"), [], "nothing missed, nothing sent")
        XCTAssertNil(try master.catchUp(from: 1, epoch: "other"), "another epoch starts again from the snapshot")
    }

    /// While an operation waits in the outbox, the terminal acknowledges no more than the
    /// sequence the operation was planned on, so the master keeps what a repeat needs; with
    /// an empty outbox it acknowledges everything it applied.
    func testTheAckStopsAtTheBaseOfTheOldestOutboxEntry() throws {
        let master = try master(applied: 2)
        let slave = try joinedSlave(master, on: .inMemory())
        XCTAssertEqual(slave.ackSeq, 2)
        let (write, _) = slave.localWrite(create([UUID().uuidString.lowercased()]), opId: "op-1", now: 1_000)
        XCTAssertNil(write.failure)
        for _ in 0..<2 {
            let other = master.apply(create([UUID().uuidString.lowercased()]), origin: "t2", now: 1_000)
            _ = slave.received(try XCTUnwrap(other.broadcast), now: 1_000)
        }
        XCTAssertEqual(slave.lastSeq, 4)
        XCTAssertEqual(slave.ackSeq, 2, "the outbox entry was planned on sequence 2")
    }

    /// When the master applies only part of one of this terminal's operations and the refusal
    /// was not heard, the slave must fetch the master's truth; that need is on disk with the
    /// applied broadcast, so a restart before the snapshot still asks for it.
    func testAPartlyAppliedOwnOperationLeavesTheNeedForASnapshotOnDisk() throws {
        let master = try master(applied: 0)
        let db = try OrderDatabase.inMemory()
        let slave = try joinedSlave(master, on: db)
        let mine = UUID().uuidString.lowercased(), taken = UUID().uuidString.lowercased()
        let (write, _) = slave.localWrite(create([mine, taken]), opId: "op-1", now: 1_000)
        XCTAssertNil(write.failure)
        // Another terminal created `taken` first, for someone else: this terminal's create of
        // it is refused (`already_exists`).
        let first = master.apply(create([taken], customer: "other"), origin: "t2", now: 1_000)
        _ = slave.received(try XCTUnwrap(first.broadcast), now: 1_000)
        let mixed = master.apply(
            OperationMessage(operation: .create, orders: create([mine, taken]).orders, opId: "op-1"), origin: "t", now: 1_000)
        XCTAssertEqual(mixed.applied.map(\.uuid), [mine])
        XCTAssertFalse(mixed.errors.isEmpty)
        _ = slave.received(try XCTUnwrap(mixed.broadcast), now: 1_000)
        XCTAssertEqual(slave.lastSeq, 2)
        XCTAssertTrue(slave.needsSnapshot)
        let restarted = try SlaveEngine(store: SQLiteSlaveStore(db: db), terminalId: "t", terminalName: "bar", configuredStore: "s")
        XCTAssertTrue(restarted.needsSnapshot, "the need survives a restart")
    }

    /// A link that closes halfway through a broadcast sent in parts leaves nothing of it
    /// behind: the next link starts clean instead of finding a stray part and reconnecting
    /// once more.
    func testALinkLostBetweenThePartsOfABroadcastStartsTheNextLinkClean() throws {
        let master = try master(applied: 1)
        let slave = try joinedSlave(master, on: .inMemory())
        let order = Order(uuid: UUID().uuidString.lowercased(), customerName: "c", created: OrderTimestamp(epochMillis: 0))
        let first = ServerMessage.applied(
            operation: .create, orders: [order], seq: 2, opId: nil, origin: "t2", snapshot: nil,
            part: BroadcastPart(part: 1, parts: 2))
        XCTAssertFalse(slave.received(first.encoded(), now: 1_000).contains(.resync(reason: "resync")))
        slave.linkClosed()
        _ = slave.linkOpened()
        let ready = slave.received(ServerMessage.ready(seq: 1, epoch: "e", store: "s").encoded(), now: 1_000)
        XCTAssertFalse(ready.contains(.resync(reason: "resync")), "\(ready)")
        XCTAssertEqual(slave.lastSeq, 1)
    }

    /// A local write whose check for an earlier answer cannot read the store is refused as a
    /// storage failure: it is never taken as accepted with nothing stored.
    func testALocalWriteThatCannotReadTheAnswersIsRefusedNotAccepted() throws {
        let db = try OrderDatabase.inMemory()
        let slave = try SlaveEngine(store: SQLiteSlaveStore(db: db), terminalId: "t", terminalName: "bar", configuredStore: "s")
        try db.connection.execute("DROP TABLE answered_ops")
        let (write, actions) = slave.localWrite(create([UUID().uuidString.lowercased()]), opId: "op-1", now: 1_000)
        guard case .storage? = write.failure else { return XCTFail("\(String(describing: write.failure))") }
        XCTAssertEqual(actions, [])
        XCTAssertEqual(slave.outboxCount, 0)
        XCTAssertEqual(try db.outboxEntries().count, 0)
    }

    /// An operation with an id whose earlier outcome cannot be read is answered
    /// `storage_failed` (the sender keeps it and tries again), never as done with nothing
    /// applied.
    func testAnOperationWhoseEarlierOutcomeCannotBeReadIsAStorageFailure() throws {
        let db = try OrderDatabase.inMemory()
        let master = try MasterEngine(store: SQLiteMasterStore(db: db), storeId: "s", epoch: "e")
        try db.connection.execute("DROP TABLE rejections")
        let message = OperationMessage(operation: .create, orders: create([UUID().uuidString.lowercased()]).orders, opId: "op-1")
        let outcome = master.apply(message, origin: "t", now: 1_000)
        XCTAssertEqual(outcome.errors.map(\.code), [.storageFailed])
        XCTAssertNil(outcome.seq)
        XCTAssertEqual(try db.lastJournalSeq(), 0)
    }

    /// The master could not store an operation sent from the outbox: the local caller hears
    /// that it is still pending (it stays in the outbox and goes again), not a final refusal.
    func testAnOperationTheMasterCouldNotStoreIsAnsweredAsPending() throws {
        let slave = try joinedSlave(try master(applied: 0), on: .inMemory())
        let (write, sent) = slave.localWrite(create([UUID().uuidString.lowercased()]), opId: "op-1", now: 1_000)
        XCTAssertNil(write.failure)
        XCTAssertTrue(sent.contains { if case .send = $0 { return true } else { return false } }, "\(sent)")
        let full = WireError(.storageFailed, "disk full")
        _ = slave.received(ServerMessage.error(full, opId: "op-1", operation: .create).encoded(), now: 1_000)
        let answer = slave.received(
            ServerMessage.result(opId: "op-1", seq: nil, applied: 0, unchanged: 0, failed: 1).encoded(), now: 1_000)
        let answered = answer.compactMap { action -> Bool? in
            if case .answered("op-1", nil, [], [full], let pending) = action { return pending }
            return nil
        }
        XCTAssertEqual(answered, [true], "\(answer)")
        XCTAssertEqual(slave.outboxCount, 1)
    }

    /// A plain StorePOS app that updates an order the store never had: the refusal records
    /// the app's order for operators (`ordersync storepos foreign`).
    func testAStorePOSUpdateOfAnUnknownOrderRecordsItAsForeign() throws {
        let db = try OrderDatabase.inMemory()
        let master = try MasterEngine(store: SQLiteMasterStore(db: db), storeId: "s", epoch: "e")
        _ = master.peerConnected(1, address: "10.0.0.5:4000", terminal: nil)
        let unknown = UUID().uuidString.lowercased()
        let update = OperationMessage(
            operation: .update, orders: [.object(JSONObject([("uuid", .string(unknown)), ("customerName", .string("old"))]))])
        _ = master.received(update.encoded(), from: 1, now: 1_000)
        XCTAssertEqual(try db.foreignOrders().map(\.uuid), [unknown])
        XCTAssertEqual(master.lastSeq, 0)
    }

    /// A local write refused on the terminal itself (nothing to send) still records its
    /// refusal, under its operation id.
    func testALocalWriteRefusedOnTheTerminalRecordsTheRefusal() throws {
        let db = try OrderDatabase.inMemory()
        let slave = try SlaveEngine(store: SQLiteSlaveStore(db: db), terminalId: "t", terminalName: "bar", configuredStore: "s")
        let unknown = UUID().uuidString.lowercased()
        let update = OperationMessage(
            operation: .update, orders: [.object(JSONObject([("uuid", .string(unknown)), ("customerName", .string("c"))]))])
        let (write, _) = slave.localWrite(update, opId: "op-1", now: 1_000)
        XCTAssertEqual(write.errors.map(\.code), [.notFound])
        XCTAssertEqual(try db.rejections(opId: "op-1").map(\.orderUUID), [unknown])
        XCTAssertEqual(slave.outboxCount, 0)
    }
}
