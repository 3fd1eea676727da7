import Foundation
import JSON
import SyncCore
import XCTest

@testable import OrderStore

/// Migration 13 and the store functions of terms, votes, lineage and the standby copy.
final class StandbyStoreTests: StoreTestCase {
    private let key = String(repeating: "ab", count: 32)

    func broadcast(_ op: OperationKind, _ uuid: String, seq: Int64, term: Int64) -> JournalEntry {
        let order = Order(uuid: uuid, customerName: "c\(seq)", created: OrderTimestamp(epochMillis: 1000))
        var o = ServerMessage.applied(operation: op, orders: [order], seq: seq, opId: nil, origin: "t", snapshot: nil).jsonObject()
        o["term"] = .int(term)
        return JournalEntry(
            seq: seq, term: term, opId: "op-\(seq)", origin: "t", operation: op, orderUUIDs: [uuid],
            message: JSONValue.object(o).serializedBytes(), recordedAtMillis: 5)
    }

    func testMigration13GivesOldEntriesTerm1AndTerminalsAVote() throws {
        let db = try openDatabase()
        try db.connection.executeOnce("DROP TABLE applied_op_ids")
        try db.connection.executeOnce("ALTER TABLE journal DROP COLUMN term")
        try db.connection.executeOnce("ALTER TABLE paired_terminals DROP COLUMN voter")
        try db.connection.executeOnce("DROP INDEX paired_terminals_by_number")
        try db.connection.executeOnce("ALTER TABLE paired_terminals DROP COLUMN number")
        try db.connection.executeOnce(
            "INSERT INTO journal (seq, op_id, origin, operation, order_uuids, message, recorded_at_ms) VALUES (1, NULL, 'x', 0, '[]', '{}', 1)"
        )
        try db.connection.executeOnce(
            "INSERT INTO paired_terminals (node_id, public_key, name, paired_ms) VALUES ('AAAA', '\(key)', 'bar', 1)")
        try db.connection.executeOnce("PRAGMA user_version = 12")
        db.close()
        let upgraded = try openDatabase()
        XCTAssertEqual(upgraded.migrationsApplied, [13, 14, 15])
        XCTAssertEqual(try upgraded.journalEntry(seq: 1)?.term, 1)
        XCTAssertEqual(try upgraded.isVoter(nodeId: "AAAA"), true)
        XCTAssertEqual(try upgraded.term(), 1)
        XCTAssertNil(try upgraded.vote())
    }

    func testAJournalEntryKeepsItsTerm() throws {
        let db = try openDatabase()
        try db.appendJournal(broadcast(.create, "u1", seq: 1, term: 3))
        XCTAssertEqual(try db.journalEntry(seq: 1)?.term, 3)
        XCTAssertEqual(try db.journalEntries(after: 0, limit: 10).map(\.term), [3])
        XCTAssertEqual(
            try db.journalSearch(orderUUID: "U1", origin: nil, fromMillis: nil, toMillis: nil, beforeSeq: nil, limit: 5).map(\.term), [3])
    }

    func testTermVoteTermStartsAndLineage() throws {
        let db = try openDatabase()
        try db.setTerm(4)
        XCTAssertEqual(try db.term(), 4)
        try db.setVote(term: 4, nodeId: "BBBB-0002")
        XCTAssertEqual(try db.vote()?.term, 4)
        XCTAssertEqual(try db.vote()?.nodeId, "BBBB-0002")
        XCTAssertEqual(try db.termStarts(), TermStarts())
        try db.addTermStart(term: 2, seq: 812)
        XCTAssertEqual(try db.termStarts().starts, [1: 1, 2: 812])
        XCTAssertEqual(try db.metadata("sync.term_starts"), #"{"1":1,"2":812}"#)
        XCTAssertEqual(try db.lineage(), try db.databaseEpoch())
        try db.setLineage("E-1")
        XCTAssertEqual(try db.lineage(), "E-1")
        try db.setMetadata("sync.term_starts", "[1]")
        XCTAssertThrowsError(try db.termStarts())
    }

    func testFetchedEntriesApplyOrdersTombstonesAndTermsTogether() throws {
        let db = try openDatabase()
        let (u1, u2, u3, u4) = (
            "9437c8f5-d742-46cb-9847-737c58093901", "9437c8f5-d742-46cb-9847-737c58093902", "9437c8f5-d742-46cb-9847-737c58093903",
            "9437c8f5-d742-46cb-9847-737c58093904"
        )
        try db.appendJournal(broadcast(.create, u1, seq: 1, term: 1))
        try db.insertOrder(Order(uuid: u1, customerName: "c1", created: OrderTimestamp(epochMillis: 1000)))
        let n = try db.applyFetchedEntries([
            broadcast(.create, u1, seq: 1, term: 1), broadcast(.create, u2, seq: 2, term: 2), broadcast(.remove, u1, seq: 3, term: 2),
        ])
        XCTAssertEqual(n, 2)
        XCTAssertEqual(try db.journalEntries(after: 0, limit: 10).map(\.term), [1, 2, 2])
        XCTAssertNil(try db.order(uuid: u1))
        XCTAssertTrue(try db.hasTombstone(uuid: u1))
        XCTAssertEqual(try db.order(uuid: u2)?.customerName, "c2")
        XCTAssertEqual(try db.metadata("replica.last_seq"), "3")
        // A gap stores nothing.
        XCTAssertThrowsError(
            try db.applyFetchedEntries([broadcast(.create, u3, seq: 4, term: 2), broadcast(.create, u4, seq: 6, term: 2)]))
        XCTAssertEqual(try db.lastJournalSeq(), 3)
        XCTAssertNil(try db.order(uuid: u3))
    }

    func testBecomingMasterSetsTermLineageAndPairsTheOldMaster() throws {
        let db = try openDatabase()
        try db.appendJournal(broadcast(.create, "u1", seq: 1, term: 1))
        let old = StoreMember(id: "MMMM-0001", key: key, name: "main till")
        try db.becomeMasterFromStandby(term: 2, lineage: "E-master", oldMaster: old, atMillis: 9)
        XCTAssertEqual(try db.term(), 2)
        XCTAssertEqual(try db.termStarts().starts, [1: 1, 2: 2])
        XCTAssertEqual(try db.lineage(), "E-master")
        XCTAssertEqual(try db.pairedTerminals().map(\.nodeId), ["MMMM-0001"])
        XCTAssertEqual(try db.isVoter(nodeId: "MMMM-0001"), true)
    }

    /// Seed 1666's slave kept term 4's start (48) from its master's `ready` and was promoted at
    /// 47: the start of a term that applied nothing here is dropped in the promotion's commit.
    func testBecomingMasterDropsAStartOfATermThatAppliedNothingHere() throws {
        let db = try openDatabase()
        try db.appendJournal(broadcast(.create, "u1", seq: 1, term: 1))
        try db.appendJournal(broadcast(.create, "u2", seq: 2, term: 3))
        try db.setTermStarts(TermStarts([1: 1, 3: 2, 4: 3]))
        try db.becomeMasterFromStandby(term: 1026, lineage: "E-master", oldMaster: nil)
        XCTAssertEqual(try db.termStarts().starts, [1: 1, 3: 2, 1026: 3])
        XCTAssertEqual(try db.term(), 1026)
    }

    func testMembersReplaceThePairedTerminals() throws {
        let db = try openDatabase()
        try db.addPairedTerminal(PairedTerminal(nodeId: "OLD", publicKey: [UInt8](repeating: 1, count: 32), name: "old", pairedAtMillis: 1))
        let members = StoreMembers(
            term: 2, master: StoreMember(id: "MMMM", key: key, name: "main"),
            terminals: [
                MemberTerminal(
                    member: StoreMember(id: "HH", key: String(repeating: "cd", count: 32), name: "handheld"), pairedMillis: 3, voter: false)
            ], settings: JSONObject([("storePOS", .bool(true))]))
        try db.transaction { try db.saveMembers(members) }
        XCTAssertEqual(try db.memberTerminals(), members.terminals)
        XCTAssertEqual(try db.standbyMaster(), members.master)
        XCTAssertEqual(try db.standbySettings(), members.settings)
    }
}

/// The standby journal is bounded as the master's is: the newest entries and the young ones stay.
final class StandbyCompactionTests: StoreTestCase {
    func testTheStandbyJournalKeepsTheNewestAndTheYoung() throws {
        let db = try openDatabase()
        for seq in Int64(1)...10 {
            try db.appendJournal(
                JournalEntry(
                    seq: seq, opId: nil, origin: "t", operation: .remove, orderUUIDs: ["u\(seq)"], message: Array("{}".utf8),
                    recordedAtMillis: seq <= 6 ? 1 : 1_000_000))
            try db.addTombstone(uuid: "u\(seq)", seq: seq)
        }
        XCTAssertEqual(try db.compactStandbyJournal(now: 2_000_000, keepNewest: 3, keepMillis: 1_500_000), 6)
        XCTAssertEqual(try db.firstJournalSeq(), 7, "entries 7...10 are young")
        XCTAssertEqual(try db.tombstoneCount(), 4, "tombstones go with their entries")
        XCTAssertEqual(try db.compactStandbyJournal(now: 9_000_000, keepNewest: 3, keepMillis: 1_500_000), 1)
        XCTAssertEqual(try db.firstJournalSeq(), 8)
    }
}
