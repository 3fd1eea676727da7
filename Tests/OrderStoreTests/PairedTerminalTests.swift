import Foundation
import SyncCore
import XCTest

@testable import OrderStore

/// The master's paired terminals: stored by key, found by id or name, revoked.
final class PairedTerminalTests: StoreTestCase {
    private func key(_ byte: UInt8) -> [UInt8] { [UInt8](repeating: byte, count: 31) + [0xA5] }

    private func terminal(_ id: String, _ name: String, key byte: UInt8) -> PairedTerminal {
        PairedTerminal(nodeId: id, publicKey: key(byte), name: name, pairedAtMillis: 1_000)
    }

    func testMigrationAddsTheTableAndDropsUnprovedTerminals() throws {
        let db = try openDatabase()
        XCTAssertGreaterThanOrEqual(OrderDatabase.schemaVersion, 8)
        try db.saveTerminal(KnownTerminal(id: "said-anything", name: "front (local API)", address: "a", ackedSeq: 0, lastSeenMillis: 1))
        // An earlier build's file: version 7 with a self-declared terminal in it.
        try db.connection.executeOnce("DROP TABLE storepos_foreign_orders")
        try db.connection.executeOnce("DROP TABLE paired_terminals")
        try db.connection.executeOnce("ALTER TABLE terminals DROP COLUMN outbox")
        try db.connection.executeOnce("ALTER TABLE journal DROP COLUMN term")
        try db.connection.executeOnce("PRAGMA user_version = 7")
        db.close()
        let upgraded = try openDatabase()
        XCTAssertEqual(upgraded.migrationsApplied.first, 8)
        XCTAssertEqual(try upgraded.knownTerminals(), [])
        XCTAssertEqual(try upgraded.pairedTerminals(), [])
    }

    func testAKnownTerminalKeepsTheOutboxItLastReported() throws {
        let db = try openDatabase()
        func saved() throws -> Int? { try db.knownTerminals().first?.outbox }
        try db.saveTerminal(KnownTerminal(id: "AAAA-0001", name: "bar", address: "a", ackedSeq: 0, lastSeenMillis: 1))
        XCTAssertNil(try saved(), "never said")
        try db.saveTerminal(KnownTerminal(id: "AAAA-0001", name: "bar", address: "a", ackedSeq: 3, lastSeenMillis: 2, outbox: 4))
        XCTAssertEqual(try saved(), 4)
        // A save that knows nothing new of the outbox keeps the last word.
        try db.saveTerminal(KnownTerminal(id: "AAAA-0001", name: "bar", address: "b", ackedSeq: 5, lastSeenMillis: 3))
        XCTAssertEqual(try saved(), 4)
        try db.saveTerminal(KnownTerminal(id: "AAAA-0001", name: "bar", address: "b", ackedSeq: 5, lastSeenMillis: 4, outbox: 0))
        XCTAssertEqual(try saved(), 0)
        // A file of the version before: the column arrives, the terminals stay, their outbox unknown.
        try db.connection.executeOnce("DROP TABLE storepos_foreign_orders")
        try db.connection.executeOnce("ALTER TABLE terminals DROP COLUMN outbox")
        try db.connection.executeOnce("ALTER TABLE journal DROP COLUMN term")
        try db.connection.executeOnce("ALTER TABLE paired_terminals DROP COLUMN voter")
        try db.connection.executeOnce("DROP INDEX paired_terminals_by_number")
        try db.connection.executeOnce("ALTER TABLE paired_terminals DROP COLUMN number")
        try db.connection.executeOnce("PRAGMA user_version = 10")
        db.close()
        let upgraded = try openDatabase()
        XCTAssertEqual(upgraded.migrationsApplied.first, 11)
        XCTAssertEqual(try upgraded.knownTerminals().map(\.id), ["AAAA-0001"])
        XCTAssertNil(try upgraded.knownTerminals().first?.outbox)
    }

    func testStoredByKeyAndListedByName() throws {
        let db = try openDatabase()
        try db.addPairedTerminal(terminal("BBBB-0002", "till-2", key: 2))
        try db.addPairedTerminal(terminal("AAAA-0001", "bar", key: 1))
        XCTAssertEqual(try db.pairedTerminals().map(\.name), ["bar", "till-2"])
        XCTAssertEqual(try db.pairedTerminal(publicKey: key(2))?.nodeId, "BBBB-0002")
        XCTAssertEqual(try db.pairedTerminal(publicKey: key(2))?.publicKey, key(2))
        XCTAssertNil(try db.pairedTerminal(publicKey: key(9)))
        XCTAssertEqual(try db.unusedTerminalName("bar"), "bar (2)")
        XCTAssertEqual(try db.unusedTerminalName("bar", except: "AAAA-0001"), "bar")
        XCTAssertEqual(try db.unusedTerminalName("office"), "office")
    }

    func testRevokeByIdOrNameForgetsItsAcksAndKeepsTheKeyRefused() throws {
        let db = try openDatabase()
        try db.addPairedTerminal(terminal("AAAA-0001", "bar", key: 1))
        try db.saveTerminal(KnownTerminal(id: "AAAA-0001", name: "bar", address: "10.0.0.2:1", ackedSeq: 5, lastSeenMillis: 9))
        guard case .found(let revoked) = try db.revokePairedTerminal("bar", atMillis: 2_000) else { return XCTFail("not found") }
        XCTAssertEqual(revoked.revokedAtMillis, 2_000)
        XCTAssertEqual(try db.knownTerminals(), [])
        XCTAssertEqual(try db.pairedTerminals(), [])
        XCTAssertEqual(try db.pairedTerminal(publicKey: key(1))?.isActive, false)
        // Revoked again (by id, any case): the first time stands; by name it is gone.
        guard case .found(let again) = try db.revokePairedTerminal("aaaa-0001", atMillis: 3_000) else { return XCTFail("not found") }
        XCTAssertEqual(again.revokedAtMillis, 2_000)
        XCTAssertEqual(try db.revokePairedTerminal("bar", atMillis: 3_000), .notFound)
        // Pairing the same key again makes it active.
        try db.addPairedTerminal(terminal("AAAA-0001", "bar", key: 1))
        XCTAssertEqual(try db.pairedTerminal(publicKey: key(1))?.isActive, true)
    }

    func testAnAmbiguousNameIsAnError() throws {
        let db = try openDatabase()
        try db.addPairedTerminal(terminal("AAAA-0001", "till", key: 1))
        try db.addPairedTerminal(terminal("BBBB-0002", "till", key: 2))
        guard case .ambiguous(let both) = try db.revokePairedTerminal("till", atMillis: 5) else { return XCTFail("not ambiguous") }
        XCTAssertEqual(both.map(\.nodeId), ["AAAA-0001", "BBBB-0002"])
        XCTAssertEqual(try db.pairedTerminals().count, 2, "nothing revoked")
        guard case .found = try db.revokePairedTerminal("BBBB-0002", atMillis: 5) else { return XCTFail("not found by id") }
        guard case .found(let left) = try db.findPairedTerminal("till") else { return XCTFail("the other one is unique now") }
        XCTAssertEqual(left.nodeId, "AAAA-0001")
    }
}
