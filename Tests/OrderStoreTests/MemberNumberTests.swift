import Foundation
import JSON
import SyncCore
import XCTest

@testable import OrderStore

/// Member numbers (migration 14, Docs/PROTOCOL.md 7.16): the master numbers its members once,
/// a standby keeps the numbers its master sent, a promoted master goes on above the highest.
final class MemberNumberTests: StoreTestCase {
    private func key(_ byte: UInt8) -> [UInt8] { [UInt8](repeating: byte, count: 32) }
    private func hexKey(_ byte: UInt8) -> String { OrderDatabase.hex(key(byte)) }

    private func pair(_ db: OrderDatabase, _ id: String, key byte: UInt8, at millis: Int64) throws {
        try db.addPairedTerminal(PairedTerminal(nodeId: id, publicKey: key(byte), name: "till-\(id)", pairedAtMillis: millis))
    }

    /// Takes `db` back to schema 13 (no numbers), as a store of the previous version is.
    private func downgradeTo13(_ db: OrderDatabase) throws {
        try db.connection.executeOnce("DROP TABLE applied_op_ids")
        try db.connection.executeOnce("DROP INDEX paired_terminals_by_number")
        try db.connection.executeOnce("ALTER TABLE paired_terminals DROP COLUMN number")
        try db.connection.executeOnce("DELETE FROM metadata WHERE key = 'member.number'")
        try db.connection.executeOnce("PRAGMA user_version = 13")
    }

    func testTheMigrationNumbersAMastersTerminalsByPairingTimeThenIdAndLeavesAStandbysToItsMaster() throws {
        let db = try openDatabase()
        try db.setMetadata("node.role", "master")
        try pair(db, "CCCC", key: 3, at: 500)
        try pair(db, "BBBB", key: 2, at: 100)
        try pair(db, "AAAA", key: 1, at: 500)
        try pair(db, "DDDD", key: 4, at: 50)
        _ = try db.revokePairedTerminal("DDDD", atMillis: 900)
        try downgradeTo13(db)
        db.close()
        let master = try openDatabase()
        XCTAssertEqual(master.migrationsApplied, [14, 15])
        XCTAssertEqual(try master.memberNumber(nodeId: "DDDD"), 1, "revoked, it keeps a number: never given twice")
        XCTAssertEqual(try master.memberNumber(nodeId: "BBBB"), 2)
        XCTAssertEqual(try master.memberNumber(nodeId: "AAAA"), 3, "same pairing time: by node id")
        XCTAssertEqual(try master.memberNumber(nodeId: "CCCC"), 4)
        XCTAssertEqual(try master.claimOwnMemberNumber(nodeId: "MMMM"), 5, "the master takes the next at start")
        XCTAssertEqual(try master.claimOwnMemberNumber(nodeId: "MMMM"), 5, "once")
        XCTAssertEqual(try master.memberTerminals().compactMap(\.member.number).sorted(), [1, 2, 3, 4])

        // A standby's file: no number until its master says.
        try master.setMetadata("node.role", "slave")
        try downgradeTo13(master)
        master.close()
        let standby = try openDatabase()
        XCTAssertEqual(standby.migrationsApplied, [14, 15])
        XCTAssertEqual(try standby.memberTerminals().compactMap(\.member.number), [])
        XCTAssertNil(try standby.memberNumber(nodeId: "BBBB"))
    }

    func testPairingGivesTheNextNumberKeepsItOnPairingAgainAndRefusesWhenNoneIsLeft() throws {
        let db = try openDatabase()
        XCTAssertEqual(try db.claimOwnMemberNumber(nodeId: "MMMM"), 1, "a new store's master is member 1")
        try pair(db, "AAAA", key: 1, at: 1)
        try pair(db, "BBBB", key: 2, at: 2)
        XCTAssertEqual(try db.memberNumber(nodeId: "AAAA"), 2)
        XCTAssertEqual(try db.memberNumber(nodeId: "BBBB"), 3)
        _ = try db.revokePairedTerminal("AAAA", atMillis: 5)
        try pair(db, "CCCC", key: 3, at: 6)
        XCTAssertEqual(try db.memberNumber(nodeId: "CCCC"), 4, "a revoked member's number is not given again")
        try pair(db, "AAAA", key: 1, at: 7)
        XCTAssertEqual(try db.memberNumber(nodeId: "AAAA"), 2, "pairing again keeps its number")
        XCTAssertEqual(try db.highestMemberNumber(), 4)

        try db.connection.executeOnce("UPDATE paired_terminals SET number = 1023 WHERE node_id = 'CCCC'")
        XCTAssertThrowsError(try pair(db, "DDDD", key: 4, at: 8)) { error in
            XCTAssertEqual((error as? StoreError)?.kind, .invalidArgument)
            XCTAssertTrue("\(error)".contains("member numbers"), "\(error)")
        }
        XCTAssertNil(try db.pairedTerminal(publicKey: key(4)), "nothing stored")
        try pair(db, "BBBB", key: 2, at: 9)
        XCTAssertEqual(try db.memberNumber(nodeId: "BBBB"), 3, "pairing again needs no new number")
    }

    func testNumbersReachAStandbyAndAPromotedMasterNumbersAboveTheHighest() throws {
        // The master's side: numbers as it sends them.
        let master = try OrderDatabase(path: directory + "/master.sqlite")
        XCTAssertEqual(try master.claimOwnMemberNumber(nodeId: "MMMM"), 1)
        try pair(master, "AAAA", key: 1, at: 1)
        try pair(master, "BBBB", key: 2, at: 2)
        let members = StoreMembers(
            term: 1, master: StoreMember(id: "MMMM", key: hexKey(9), name: "main", number: 1),
            terminals: try master.memberTerminals())
        guard
            case .success(.members(let received))? = StandbyMessage.decode(
                try XCTUnwrap(JSONParser.parse(members.encodedBytes()).objectValue))
        else { return XCTFail("members did not decode") }
        XCTAssertEqual(received, members, "the numbers travel")

        // The standby B keeps them, and is promoted.
        let standby = try openDatabase()
        try standby.transaction { try standby.saveMembers(received) }
        XCTAssertEqual(try standby.memberNumber(nodeId: "AAAA"), 2)
        XCTAssertEqual(try standby.memberNumber(nodeId: "BBBB"), 3)
        XCTAssertEqual(try standby.standbyMaster()?.number, 1)
        try standby.becomeMasterFromStandby(term: 1027, lineage: "E", oldMaster: try standby.standbyMaster(), atMillis: 9)
        XCTAssertEqual(try standby.claimOwnMemberNumber(nodeId: "BBBB"), 3, "its own number, as its master gave it")
        XCTAssertEqual(try standby.memberNumber(nodeId: "MMMM"), 1, "the old master keeps its number among the terminals")
        try pair(standby, "EEEE", key: 5, at: 10)
        XCTAssertEqual(try standby.memberNumber(nodeId: "EEEE"), 4, "the next pairing goes on above the highest")
    }
}
