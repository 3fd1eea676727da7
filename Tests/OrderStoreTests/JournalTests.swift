import Foundation
import SyncCore
import XCTest

@testable import OrderStore

final class JournalTests: StoreTestCase {
    private let a = "AAAAAAAA-0000-4000-8000-000000000001"
    private let b = "bbbbbbbb-0000-4000-8000-000000000002"

    private func entry(_ seq: Int64, opId: String?, _ operation: OperationKind, _ uuids: [String]) -> JournalEntry {
        JournalEntry(
            seq: seq, opId: opId, origin: "terminal-\(seq % 2)", operation: operation, orderUUIDs: uuids,
            message: Array("{\"operation\":\(operation.rawValue),\"seq\":\(seq)}".utf8),
            recordedAtMillis: 1_700_000_000_000 + seq)
    }

    func testAppendAndLookUp() throws {
        let db = try openDatabase()
        XCTAssertEqual(try db.lastJournalSeq(), 0)
        XCTAssertNil(try db.firstJournalSeq())
        let entries = [
            entry(1, opId: "op-1", .create, [a]),
            entry(2, opId: nil, .create, [b]),
            entry(3, opId: "op-3", .update, [a, b]),
            entry(4, opId: nil, .remove, [b.uppercased()]),
            entry(5, opId: "op-5", .update, [a, a]),
        ]
        for e in entries { try db.appendJournal(e) }

        XCTAssertEqual(try db.lastJournalSeq(), 5)
        XCTAssertEqual(try db.firstJournalSeq(), 1)
        XCTAssertEqual(try db.journalEntry(opId: "op-3"), entries[2])
        XCTAssertEqual(try db.journalEntry(seq: 4), entries[3])
        XCTAssertNil(try db.journalEntry(opId: "op-2"))
        XCTAssertNil(try db.journalEntry(seq: 6))

        XCTAssertEqual(try db.journal(since: 0, orderUUID: nil, limit: 100), entries)
        XCTAssertEqual(try db.journal(since: 2, orderUUID: nil, limit: 100), Array(entries[2...]))
        XCTAssertEqual(try db.journal(since: 1, orderUUID: nil, limit: 2), Array(entries[1...2]))
        XCTAssertEqual(try db.journal(since: 5, orderUUID: nil, limit: 100), [])
        XCTAssertEqual(try db.journal(since: 0, orderUUID: nil, limit: 0), [])

        // By order, in any case, each entry once even when it names the order twice.
        XCTAssertEqual(try db.journal(since: 0, orderUUID: a.lowercased(), limit: 100).map(\.seq), [1, 3, 5])
        XCTAssertEqual(try db.journal(since: 0, orderUUID: b, limit: 100).map(\.seq), [2, 3, 4])
        XCTAssertEqual(try db.journal(since: 3, orderUUID: b.uppercased(), limit: 100), [entries[3]])
        XCTAssertEqual(try db.journal(since: 0, orderUUID: a, limit: 1).map(\.seq), [1])
        XCTAssertEqual(try db.journal(since: 0, orderUUID: "no-such-order", limit: 100), [])
        XCTAssertEqual(try db.journal(since: 0, orderUUID: nil, limit: 100)[4].orderUUIDs, [a, a])

        assertStoreError(.invalidArgument) { try db.journal(since: 0, orderUUID: nil, limit: -1) }
    }

    func testOperationIdsAndSequenceNumbersAreUnique() throws {
        let db = try openDatabase()
        try db.appendJournal(entry(1, opId: "op-1", .create, [a]))
        try db.appendJournal(entry(2, opId: nil, .create, [b]))
        try db.appendJournal(entry(3, opId: nil, .update, [b]))

        let sameOpId = assertStoreError(.duplicate) { try db.appendJournal(self.entry(4, opId: "op-1", .update, [b])) }
        XCTAssertEqual(sameOpId?.code, StoreError.constraintUnique)
        XCTAssertTrue(sameOpId?.message.contains("op-1") ?? false)
        let sameSeq = assertStoreError(.duplicate) { try db.appendJournal(self.entry(3, opId: "op-9", .update, [a])) }
        XCTAssertNotNil(sameSeq?.code)

        // Nothing of the refused entries was stored, in the journal or its order index.
        XCTAssertEqual(try db.lastJournalSeq(), 3)
        XCTAssertNil(try db.journalEntry(opId: "op-9"))
        XCTAssertEqual(try db.journal(since: 0, orderUUID: a, limit: 10).map(\.seq), [1])
        XCTAssertEqual(try db.journal(since: 0, orderUUID: b, limit: 10).map(\.seq), [2, 3])
    }

    func testTextThatLooksLikeSQLInTheJournalIsStoredVerbatim() throws {
        let db = try openDatabase()
        var e = entry(1, opId: "x'); DROP TABLE journal;--", .create, ["'); DROP TABLE orders;--"])
        e.origin = "\"; DELETE FROM journal; --"
        e.message = Array("{\"customerName\":\"'); DROP TABLE orders;--\"}".utf8)
        try db.appendJournal(e)
        XCTAssertEqual(try db.journalEntry(opId: "x'); DROP TABLE journal;--"), e)
        XCTAssertEqual(try db.journal(since: 0, orderUUID: "'); DROP TABLE ORDERS;--", limit: 5), [e])
    }

    func testCompactionRemovesOldEntriesAndTheirIndex() throws {
        let db = try openDatabase()
        for seq in Int64(1)...6 { try db.appendJournal(entry(seq, opId: "op-\(seq)", .update, [seq % 2 == 0 ? a : b])) }
        XCTAssertEqual(try db.deleteJournal(through: 4), 4)
        XCTAssertEqual(try db.firstJournalSeq(), 5)
        XCTAssertEqual(try db.lastJournalSeq(), 6)
        XCTAssertEqual(try db.journal(since: 0, orderUUID: nil, limit: 10).map(\.seq), [5, 6])
        XCTAssertEqual(try db.journal(since: 0, orderUUID: a, limit: 10).map(\.seq), [6])
        XCTAssertEqual(try db.connection.scalarInt("SELECT count(*) FROM journal_orders"), 2)
        XCTAssertNil(try db.journalEntry(opId: "op-1"), "an op id is only remembered while its entry is kept")
    }

    func testJournalAndOrderChangeCommitTogether() throws {
        let db = try openDatabase()
        let order = makeOrder(a)
        XCTAssertThrowsError(
            try db.transaction {
                try db.insertOrder(order)
                try db.appendJournal(entry(1, opId: "op-1", .create, [a]))
                throw TestAbort()
            })
        XCTAssertNil(try db.order(uuid: a))
        XCTAssertEqual(try db.lastJournalSeq(), 0)

        try db.transaction {
            try db.insertOrder(order)
            try db.appendJournal(entry(1, opId: "op-1", .create, [a]))
        }
        XCTAssertEqual(try db.order(uuid: a), order)
        XCTAssertEqual(try db.lastJournalSeq(), 1)
    }
}
