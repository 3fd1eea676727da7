import Foundation
import JSON
import SyncCore
import XCTest

@testable import OrderStore

/// A standby's snapshot carries the operation ids it covers (`opIds`, Docs/PROTOCOL.md 7.2): kept
/// with the snapshot, a node promoted from it answers a retry of one of them with its first
/// outcome instead of applying it again at a new seq.
extension StandbyEngineTests {
    private func rename(_ uuid: String, _ name: String, opId: String) -> OperationMessage {
        OperationMessage(
            operation: .update, orders: [.object(JSONObject([("uuid", .string(uuid)), ("customerName", .string(name))]))], opId: opId)
    }

    func testANodePromotedFromASnapshotAnswersARetryBelowItWithoutApplyingItAgain() throws {
        let masterDB = try OrderDatabase.inMemory()
        let master = try MasterEngine(store: SQLiteMasterStore(db: masterDB), storeId: "s", epoch: "e")
        XCTAssertEqual(master.apply(create([uuid(1)], opId: "op-a"), origin: "t2", now: 1).seq, 1)
        XCTAssertEqual(master.apply(rename(uuid(1), "first", opId: "op-u"), origin: "t2", now: 1).seq, 2)
        XCTAssertEqual(master.apply(rename(uuid(1), "second", opId: "op-v"), origin: "t2", now: 1).seq, 3)

        // A standby joins after them: a snapshot at 3, led by the ids it covers.
        let db = try OrderDatabase.inMemory()
        let (slave, texts) = try join(master, on: db)
        XCTAssertEqual(slave.lastSeq, 3)
        let ids = try XCTUnwrap(texts.firstIndex { $0.contains("\"type\":\"opIds\"") }, "\(texts)")
        let firstPart = try XCTUnwrap(texts.firstIndex { $0.contains("\"snapshot\":") })
        XCTAssertLessThan(ids, firstPart, "the ids lead the snapshot")
        XCTAssertEqual(try db.journalEntries(after: 0, limit: 10), [], "the snapshot emptied the journal")
        XCTAssertEqual(try db.appliedOpIdSeq(opId: "op-a"), 1)
        XCTAssertEqual(try db.appliedOpIdSeq(opId: "op-u"), 2)
        XCTAssertEqual(try db.appliedOpIdSeq(opId: "op-v"), 3)
        XCTAssertNil(try db.appliedOpIdSeq(opId: "op-new"))

        // The master dies; the standby is promoted and a terminal retries op-u (its answer was lost).
        try db.becomeMasterFromStandby(term: 2, lineage: "e", oldMaster: nil)
        let promoted = try MasterEngine(store: SQLiteMasterStore(db: db), storeId: "s", epoch: "e")
        XCTAssertEqual(promoted.lastSeq, 3)
        let retry = promoted.apply(rename(uuid(1), "first", opId: "op-u"), origin: "t2", now: 2)
        XCTAssertTrue(retry.isRepeat)
        XCTAssertEqual(retry.seq, 2, "its first place")
        XCTAssertNil(retry.broadcast, "nothing to send again: the snapshot holds it")
        XCTAssertEqual(try db.lastJournalSeq(), 3, "not applied again")
        XCTAssertEqual(try db.order(uuid: uuid(1))?.customerName, "second", "the later change stands")
        // A new operation is applied as usual, after the base.
        XCTAssertEqual(promoted.apply(rename(uuid(1), "third", opId: "op-new"), origin: "t2", now: 2).seq, 4)

        // A terminal whose outbox still holds op-v says so in its hello: the snapshot names it applied.
        let other = try OrderDatabase.inMemory()
        _ = try other.appendOutbox(
            OutboxEntry(
                opId: "op-v", message: Array(#"{"operation":1,"orders":[],"opId":"op-v"}"#.utf8), orderKeys: [uuid(1)],
                createdMillis: 1))
        let (_, answer) = try join(promoted, peer: 2, on: other)
        XCTAssertTrue(answer.contains { $0.contains("\"applied\":{\"op-v\":3}") }, "\(answer.suffix(3))")
        XCTAssertEqual(try other.outboxEntries().map(\.opId), [], "answered by the snapshot, not sent again")
    }

    func testAStorePOSAppGetsNoOperationIds() throws {
        let master = try MasterEngine(store: SQLiteMasterStore(db: .inMemory()), storeId: "s", epoch: "e")
        XCTAssertEqual(master.apply(create([uuid(1)], opId: "op-a"), origin: "t2", now: 1).seq, 1)
        let texts = sends(master.peerConnected(7, address: "10.0.0.7:5000", terminal: nil), to: 7)
        XCTAssertFalse(texts.isEmpty)
        XCTAssertFalse(texts.contains { $0.contains("opIds") || $0.contains("op-a") }, "\(texts)")
    }

    func testASnapshotKeepsTheStandbysOwnIdsOfItsLineageAndTheMastersBounded() throws {
        let db = try OrderDatabase.inMemory()
        let store = SQLiteSlaveStore(db: db)
        var c = SlaveCommit()
        (c.lastSeq, c.epoch) = (2, "e")
        c.journal = [
            JournalEntry(seq: 1, opId: "own-1", origin: "t", operation: .create, orderUUIDs: [], message: [], recordedAtMillis: 1),
            JournalEntry(seq: 2, opId: "own-2", origin: "t", operation: .create, orderUUIDs: [], message: [], recordedAtMillis: 1),
        ]
        try store.commit(c)
        // A snapshot at 9 of the same lineage: the master's ids, and the standby's own.
        var snap = SlaveCommit()
        (snap.replaceAll, snap.lastSeq, snap.epoch, snap.standbyBase) = ([], 9, "e", 9)
        snap.appliedOpIds = ["m-5": 5, "own-2": 2, "above": 10]
        try store.commit(snap)
        XCTAssertEqual(try db.appliedOpIdSeq(opId: "own-1"), 1)
        XCTAssertEqual(try db.appliedOpIdSeq(opId: "own-2"), 2)
        XCTAssertEqual(try db.appliedOpIdSeq(opId: "m-5"), 5)
        XCTAssertNil(try db.appliedOpIdSeq(opId: "above"), "nothing above the snapshot's base")
        XCTAssertEqual(try db.appliedOpIds(through: 9), ["own-1": 1, "own-2": 2, "m-5": 5], "what its own snapshots carry")
        XCTAssertEqual(try db.appliedOpIds(through: 9, limit: 2), ["own-2": 2, "m-5": 5], "the newest")
        // Journal compaction takes the ids at or below the entries it drops.
        try db.deleteJournal(through: 2)
        XCTAssertNil(try db.appliedOpIdSeq(opId: "own-2"))
        XCTAssertEqual(try db.appliedOpIdSeq(opId: "m-5"), 5)
        // A snapshot of another lineage: only what its master sends.
        var other = SlaveCommit()
        (other.replaceAll, other.lastSeq, other.epoch, other.standbyBase) = ([], 4, "f", 4)
        other.appliedOpIds = ["f-3": 3]
        try store.commit(other)
        XCTAssertEqual(try db.appliedOpIds(through: 100), ["f-3": 3])
    }
}
