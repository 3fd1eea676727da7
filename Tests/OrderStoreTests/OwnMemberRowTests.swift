import Foundation
import SyncCore
import XCTest

@testable import OrderStore

/// The master's own row among the paired terminals (Docs/PROTOCOL.md 7.20): added once under
/// its member number, a voter; moved to its new key after a rotation; kept as its master listed
/// it when a standby holding it is promoted.
final class OwnMemberRowTests: StoreTestCase {
    private func key(_ byte: UInt8) -> [UInt8] { [UInt8](repeating: byte, count: 32) }

    func testANewStoresMasterGetsAVotingRowUnderItsNumberOnce() throws {
        let db = try openDatabase()
        guard case .added(let row) = try db.keepOwnMemberRow(nodeId: "MMMM", publicKey: key(9), name: "front", atMillis: 100) else {
            return XCTFail("no row added")
        }
        XCTAssertEqual(row, PairedTerminal(nodeId: "MMMM", publicKey: key(9), name: "front", pairedAtMillis: 100))
        XCTAssertEqual(try db.ownMemberNumber(), 1)
        XCTAssertEqual(try db.memberNumber(nodeId: "MMMM"), 1, "its row has its own number")
        XCTAssertEqual(try db.isVoter(nodeId: "MMMM"), true)
        XCTAssertEqual(try db.keepOwnMemberRow(nodeId: "MMMM", publicKey: key(9), name: "front", atMillis: 200), .kept)
        XCTAssertEqual(try db.pairedTerminal(publicKey: key(9))?.pairedAtMillis, 100, "added once")
        // A terminal pairing later under the master's name gets another one, and the next number.
        try db.addPairedTerminal(
            PairedTerminal(nodeId: "AAAA", publicKey: key(1), name: try db.unusedTerminalName("front"), pairedAtMillis: 300))
        XCTAssertEqual(try db.pairedTerminal(publicKey: key(1))?.name, "front (2)")
        XCTAssertEqual(try db.memberNumber(nodeId: "AAAA"), 2)
    }

    func testAStoreOfThePreviousVersionGetsTheRowUnderTheNumberTheMasterTook() throws {
        let db = try openDatabase()
        // The previous version: the master took number 1, its terminals 2 and 3, no row of its own.
        XCTAssertEqual(try db.claimOwnMemberNumber(nodeId: "MMMM"), 1)
        try db.addPairedTerminal(PairedTerminal(nodeId: "AAAA", publicKey: key(1), name: "front", pairedAtMillis: 10))
        try db.addPairedTerminal(PairedTerminal(nodeId: "BBBB", publicKey: key(2), name: "patio", pairedAtMillis: 20))
        guard case .added(let row) = try db.keepOwnMemberRow(nodeId: "MMMM", publicKey: key(9), name: "front", atMillis: 30) else {
            return XCTFail("no row added")
        }
        XCTAssertEqual(row.name, "front (2)", "a terminal had its name")
        XCTAssertEqual(try db.memberNumber(nodeId: "MMMM"), 1)
        XCTAssertEqual(try db.memberTerminals().map(\.member.id), ["AAAA", "MMMM", "BBBB"])
        XCTAssertEqual(try db.memberTerminals().filter(\.voter).count, 3)
        XCTAssertEqual(try db.keepOwnMemberRow(nodeId: "MMMM", publicKey: key(9), name: "front", atMillis: 40), .kept)
    }

    func testAfterARotationTheRowOfItsNumberTakesTheNewKey() throws {
        let db = try openDatabase()
        try db.keepOwnMemberRow(nodeId: "MMMM", publicKey: key(9), name: "front", atMillis: 1)
        try db.setVoter(nodeId: "MMMM", true)
        XCTAssertEqual(
            try db.keepOwnMemberRow(nodeId: "NNNN", publicKey: key(8), name: "front", atMillis: 2),
            .rekeyed(PairedTerminal(nodeId: "NNNN", publicKey: key(8), name: "front", pairedAtMillis: 1), previousId: "MMMM"))
        XCTAssertNil(try db.pairedTerminal(publicKey: key(9)), "the retired key is no member any more")
        XCTAssertEqual(try db.memberNumber(nodeId: "NNNN"), 1)
        XCTAssertEqual(try db.ownMemberNumber(), 1)
    }

    func testAPromotedStandbyKeepsTheOldMastersRowAsItsMasterListedIt() throws {
        let db = try openDatabase()
        try db.setMetadata("node.role", "slave")
        let master = StoreMember(id: "MMMM", key: OrderDatabase.hex(key(9)), name: "front", number: 1)
        let me = StoreMember(id: "AAAA", key: OrderDatabase.hex(key(1)), name: "bar", number: 2)
        let members = StoreMembers(
            term: 1, master: master,
            terminals: [MemberTerminal(member: master, pairedMillis: 5), MemberTerminal(member: me, pairedMillis: 6)])
        try db.transaction { try db.saveMembers(members) }
        try db.becomeMasterFromStandby(term: 2, lineage: "lineage", oldMaster: try db.standbyMaster(), atMillis: 99)
        XCTAssertEqual(try db.pairedTerminal(publicKey: key(9))?.pairedAtMillis, 5, "the row its master sent, not a new one")
        XCTAssertEqual(try db.memberTerminals().map(\.member.id), ["AAAA", "MMMM"])
        // The engine counts the master apart: its own row among the terminals is not a second voter.
        let promoted = StoreMembers(term: 2, master: me, terminals: try db.memberTerminals())
        XCTAssertEqual(MemberVoters(promoted).count, 1, "front votes besides the master bar")
        XCTAssertEqual(MemberVoters(members).count, 1, "bar votes besides the master front")
    }
}
