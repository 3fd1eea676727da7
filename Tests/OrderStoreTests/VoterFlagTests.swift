import Foundation
import SyncCore
import XCTest

@testable import OrderStore

/// The voter flag of paired terminals (`paired_terminals.voter`, migration 13): a handheld does
/// not vote; before the migration every terminal votes and the flag cannot be cleared.
final class VoterFlagTests: StoreTestCase {
    private func terminal(_ id: String, _ name: String, key byte: UInt8) -> PairedTerminal {
        PairedTerminal(nodeId: id, publicKey: [UInt8](repeating: byte, count: 32), name: name, pairedAtMillis: 1_000)
    }

    func testWithoutTheColumnEveryTerminalVotesAndClearingIsRefused() throws {
        let db = try openDatabase()
        try db.addPairedTerminal(terminal("AAAA", "till-1", key: 1))
        // The column comes with migration 13; a store of this build may not have it yet.
        if try db.hasVoterFlag() { try db.connection.executeOnce("ALTER TABLE paired_terminals DROP COLUMN voter") }
        XCTAssertFalse(try db.hasVoterFlag())
        XCTAssertEqual(try db.nonVoters(), [])
        XCTAssertThrowsError(try db.setVoter(nodeId: "AAAA", false)) { error in
            XCTAssertEqual((error as? StoreError)?.kind, .schemaMismatch)
        }
    }

    func testAHandheldDoesNotVoteAndAnUnknownTerminalIsNotFound() throws {
        let db = try openDatabase()
        if try !db.hasVoterFlag() {
            // As migration 13 adds it.
            try db.connection.executeOnce("ALTER TABLE paired_terminals ADD COLUMN voter INTEGER NOT NULL DEFAULT 1")
        }
        try db.addPairedTerminal(terminal("AAAA", "till-1", key: 1))
        try db.addPairedTerminal(terminal("BBBB", "handheld-1", key: 2))
        XCTAssertEqual(try db.nonVoters(), [], "every terminal votes by default")
        try db.setVoter(nodeId: "BBBB", false)
        XCTAssertEqual(try db.nonVoters(), ["BBBB"])
        try db.setVoter(nodeId: "BBBB", true)
        XCTAssertEqual(try db.nonVoters(), [])
        XCTAssertThrowsError(try db.setVoter(nodeId: "CCCC", false)) { error in
            XCTAssertEqual((error as? StoreError)?.kind, .notFound)
        }
    }
}
