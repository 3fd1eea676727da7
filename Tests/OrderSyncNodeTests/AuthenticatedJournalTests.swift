import Foundation
import JSON
import OrderStore
import SyncCore
import XCTest

/// The master engine's rule that the journal names the authenticated terminal, not what its
/// hello claims (on the SQLite store).
final class AuthenticatedJournalTests: XCTestCase {
    func testTheJournalNamesTheAuthenticatedTerminalNotTheHello() throws {
        let db = try OrderDatabase.inMemory()
        let master = try MasterEngine(store: SQLiteMasterStore(db: db), storeId: "s", epoch: "e")
        let till = AuthenticatedTerminal(nodeId: "ABCD-EFGH-IJKL-MNOP-QRST-UVWX-YZ23-4567", name: "till-2")
        XCTAssertEqual(master.peerConnected(1, address: "10.0.0.3:5555", terminal: till), [])
        let hello = master.received(
            HelloMessage(terminalId: "forged", terminalName: "front (local API)", store: "s", lastSeq: 0, epoch: "e").encoded(),
            from: 1, now: 1)
        XCTAssertTrue(
            hello.contains {
                if case .log(let l) = $0 { return l.event == "peer.hello_mismatch" && l.level == .debug }; return false
            })
        XCTAssertEqual(master.peers[1]?.terminalName, "till-2")
        XCTAssertEqual(master.peers[1]?.terminalId, till.nodeId)
        let order = JSONValue.object(JSONObject([("uuid", .string(UUID().uuidString)), ("customerName", .string("A"))]))
        _ = master.received(OperationMessage(operation: .create, orders: [order], opId: "op-1").encoded(), from: 1, now: 2)
        XCTAssertEqual(try db.journal(since: 0, orderUUID: nil, limit: 10).map(\.origin), ["till-2 [ABCD-EFGH]@10.0.0.3:5555"])
        XCTAssertEqual(try db.knownTerminals().map(\.id), [till.nodeId], "acks are kept under the authenticated id")

        // A StorePOS terminal is its address, and may not say hello.
        _ = master.peerConnected(2, address: "10.0.0.9:1", terminal: nil)
        XCTAssertNil(master.peers[2]?.terminalName)
        XCTAssertEqual(master.peers[2]?.origin, "10.0.0.9:1")

        // Revoked: its link closes, and it is not recorded again when the link ends.
        try db.saveTerminal(KnownTerminal(id: till.nodeId, name: "till-2", address: "x", ackedSeq: 0, lastSeenMillis: 1))
        XCTAssertEqual(master.revoked(terminal: till.nodeId), [.close(peer: 1, code: 1008, reason: "revoked")])
        try db.forgetTerminals(lastSeenBefore: .max)
        _ = master.peerDisconnected(1, now: 5)
        XCTAssertEqual(try db.knownTerminals(), [])
    }
}
