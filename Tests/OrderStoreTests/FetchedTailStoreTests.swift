import Foundation
import JSON
import SyncCore
import XCTest

@testable import OrderStore

/// `OrderDatabase.applyFetchedEntries` on a candidate whose own tail diverges from the voter's,
/// or whose history ends at a snapshot (`standby.base`) with an empty journal.
final class FetchedTailStoreTests: StoreTestCase {
    private let (u1, u2, u3, u4) = (
        "9437c8f5-d742-46cb-9847-737c58093901", "9437c8f5-d742-46cb-9847-737c58093902", "9437c8f5-d742-46cb-9847-737c58093903",
        "9437c8f5-d742-46cb-9847-737c58093904"
    )

    private func broadcast(_ op: OperationKind, _ uuid: String, seq: Int64, term: Int64, name: String, opId: String?) -> JournalEntry {
        let order = Order(uuid: uuid, customerName: name, created: OrderTimestamp(epochMillis: 1000))
        var o = ServerMessage.applied(operation: op, orders: [order], seq: seq, opId: opId, origin: "t", snapshot: nil).jsonObject()
        o["term"] = .int(term)
        return JournalEntry(
            seq: seq, term: term, opId: opId, origin: "t", operation: op, orderUUIDs: [uuid],
            message: JSONValue.object(o).serializedBytes(), recordedAtMillis: 5)
    }

    /// Own history: 1 (t1) creates u1, 2 (t2, op-2) creates u2, 3 (t2, no op id) renames u1.
    private func candidate() throws -> OrderDatabase {
        let db = try openDatabase()
        for e in [
            broadcast(.create, u1, seq: 1, term: 1, name: "first", opId: "op-1"),
            broadcast(.create, u2, seq: 2, term: 2, name: "lost", opId: "op-2"),
            broadcast(.update, u1, seq: 3, term: 2, name: "renamed", opId: nil),
        ] {
            try db.appendJournal(e)
        }
        try db.insertOrder(Order(uuid: u1, customerName: "renamed", created: OrderTimestamp(epochMillis: 1000)))
        try db.insertOrder(Order(uuid: u2, customerName: "lost", created: OrderTimestamp(epochMillis: 1000)))
        try db.setMetadata("replica.last_seq", "3")
        return db
    }

    func testADivergentOwnTailIsRequeuedAndReplacedInOneCommit() throws {
        let db = try candidate()
        try db.appendOutbox(OutboxEntry(opId: "op-2", message: Array("{}".utf8), orderKeys: [u2], createdMillis: 1, baseSeq: 1))
        let n = try db.applyFetchedEntries(
            [
                broadcast(.create, u1, seq: 1, term: 1, name: "first", opId: "op-1"),
                broadcast(.create, u3, seq: 2, term: 3, name: "voter", opId: "op-v2"),
                broadcast(.create, u4, seq: 3, term: 3, name: "voter", opId: "op-v3"),
                broadcast(.remove, u3, seq: 4, term: 3, name: "voter", opId: "op-v4"),
            ], atMillis: 77)
        XCTAssertEqual(n, 3, "the shared entry 1 is skipped; 2 and 3 replace the own ones")
        XCTAssertEqual(try db.journalEntries(after: 0, limit: 10).map(\.term), [1, 3, 3, 3])
        XCTAssertEqual(try db.journalEntries(after: 0, limit: 10).map(\.opId), ["op-1", "op-v2", "op-v3", "op-v4"])
        XCTAssertEqual(try db.order(uuid: u1)?.customerName, "first", "u1 as the kept entry 1 says")
        XCTAssertNil(try db.order(uuid: u2), "u2 was created only by a replaced entry")
        XCTAssertNil(try db.order(uuid: u3))
        XCTAssertTrue(try db.hasTombstone(uuid: u3))
        XCTAssertEqual(try db.order(uuid: u4)?.customerName, "voter")
        XCTAssertEqual(try db.metadata("replica.last_seq"), "4")
        let outbox = try db.outboxEntries()
        XCTAssertEqual(
            outbox.map(\.opId), ["requeue-2-3", "op-2"],
            "entry 3 had no op id; re-queued, it goes before op-2, which was queued after it was applied")
        guard outbox.count == 2 else { return }
        let requeued = try XCTUnwrap(try JSONParser.parse(outbox[0].message).objectValue)
        XCTAssertEqual(requeued["operation"]?.intValue, 1)
        XCTAssertEqual(requeued["opId"]?.stringValue, "requeue-2-3")
        let order = requeued["orders"]?.arrayValue?.first?.objectValue
        XCTAssertEqual(order?["uuid"]?.stringValue, u1)
        XCTAssertNil(order?["version"], "the other history's version would refuse the retry as a conflict")
        XCTAssertEqual(outbox[0].createdMillis, 77)
        XCTAssertEqual(outbox[0].baseSeq, 1)
    }

    func testAnOrderWhoseEarlierStateIsUnknownStoresNothing() throws {
        let db = try candidate()
        try db.deleteJournal(through: 1) // entry 1, the only earlier word on u1, is compacted
        XCTAssertThrowsError(
            try db.applyFetchedEntries([broadcast(.create, u3, seq: 2, term: 3, name: "voter", opId: "op-v2")], atMillis: 1))
        XCTAssertEqual(try db.journalEntries(after: 0, limit: 10).map(\.seq), [2, 3])
        XCTAssertEqual(try db.order(uuid: u1)?.customerName, "renamed")
        XCTAssertEqual(try db.outboxCount(), 0)
    }

    func testAfterASnapshotTheStoreIsAtItsBaseAndAGapIsRefused() throws {
        let db = try openDatabase()
        try db.setMetadata("replica.last_seq", "10")
        try db.setMetadata("standby.base", "10")
        try db.setMetadata("standby.base_term", "2")
        XCTAssertEqual(try db.standbyPosition(), LogPosition(lastSeq: 10, lastTerm: 2))
        XCTAssertThrowsError(try db.applyFetchedEntries([broadcast(.create, u1, seq: 12, term: 2, name: "x", opId: nil)])) {
            XCTAssertTrue("\($0)".contains("does not follow entry 10"), "\($0)")
        }
        XCTAssertThrowsError(
            try db.applyFetchedEntries([broadcast(.create, u1, seq: 9, term: 3, name: "x", opId: nil)]),
            "entries to replace that the journal no longer holds")
        XCTAssertEqual(try db.lastJournalSeq(), 0)
        XCTAssertEqual(try db.applyFetchedEntries([broadcast(.create, u1, seq: 11, term: 2, name: "x", opId: nil)]), 1)
        XCTAssertEqual(try db.standbyPosition(), LogPosition(lastSeq: 11, lastTerm: 2))
        XCTAssertEqual(try db.order(uuid: u1)?.customerName, "x")
    }
}
