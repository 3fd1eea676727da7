import Foundation
import JSON
import SyncCore
import WireTestSupport
import XCTest

@testable import OrderStore

/// The master engine inside a group commit on the real SQLite store: operations applied in one
/// transaction, and, when its commit fails, every one of them refused and the sequence back
/// where the disk is.
final class GroupCommitEngineTests: XCTestCase {
    var dir: String!

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "ordersync-group-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// A UUID for `name` that reads back in order.
    private func u(_ name: String) -> String {
        let hex = Array(name.utf8).map { String(format: "%02x", $0) }.joined()
        let padded = String((hex + String(repeating: "0", count: 32)).prefix(32))
        let c = Array(padded)
        return String(c[0..<8]) + "-" + String(c[8..<12]) + "-" + String(c[12..<16]) + "-" + String(c[16..<20]) + "-" + String(c[20..<32])
    }

    private func create(_ name: String, opId: String? = nil) -> String {
        OperationMessage(
            operation: .create, orders: [.object(JSONObject([("uuid", .string(u(name))), ("customerName", .string("c"))]))], opId: opId
        )
        .encoded()
    }

    private func hello(_ master: MasterEngine, peer: Int, terminal: String) {
        _ = master.peerConnected(peer, address: "10.0.0.\(peer):1", terminal: AuthenticatedTerminal(nodeId: terminal, name: terminal))
        _ = master.received(
            HelloMessage(terminalId: terminal, terminalName: terminal, store: "s", lastSeq: 0, epoch: "e").encoded(), from: peer,
            now: 1)
    }

    func testACommittedGroupKeepsEveryOperationInOrder() throws {
        let db = try OrderDatabase(path: dir + "/m.sqlite")
        let master = try MasterEngine(store: SQLiteMasterStore(db: db), storeId: "s", epoch: "e")
        _ = master.peerConnected(1, address: "10.0.0.1:1", terminal: nil)
        _ = master.peerConnected(2, address: "10.0.0.2:1", terminal: nil)
        try db.beginGroup()
        master.beginGroup()
        var broadcasts: [String] = []
        for i in 0..<20 {
            for case .broadcast(let text, let peers) in master.received(create("u\(i)"), from: 1, now: 2) {
                XCTAssertEqual(peers, [2], "the other terminal gets it; the StorePOS sender does not")
                broadcasts.append(text.text)
            }
        }
        XCTAssertEqual(master.groupApplied.map(\.orderUUIDs), (0..<20).map { [u("u\($0)")] })
        XCTAssertEqual(master.groupApplied.map(\.sender), Array(repeating: 1, count: 20))
        try db.commitGroup()
        master.groupCommitted()
        XCTAssertTrue(master.groupApplied.isEmpty)
        XCTAssertEqual(master.lastSeq, 20)
        XCTAssertEqual(broadcasts.count, 20)
        let reopened = try OrderDatabase(path: dir + "/m.sqlite")
        XCTAssertEqual(try reopened.lastJournalSeq(), 20)
        XCTAssertEqual(try reopened.journal(since: 0, orderUUID: nil, limit: 100).map(\.orderUUIDs), (0..<20).map { [u("u\($0)")] })
    }

    func testAFailedGroupRefusesEachOperationToItsSenderAndRewindsTheSequence() throws {
        let db = try OrderDatabase(path: dir + "/m.sqlite")
        let master = try MasterEngine(store: SQLiteMasterStore(db: db), storeId: "s", epoch: "e")
        hello(master, peer: 1, terminal: "till-1")
        _ = master.peerConnected(2, address: "10.0.0.2:1", terminal: nil)
        _ = master.received(create("before", opId: "op-0"), from: 1, now: 2)
        XCTAssertEqual(master.lastSeq, 1)
        try db.beginGroup()
        master.beginGroup()
        _ = master.received(create("a", opId: "op-1"), from: 1, now: 3)
        _ = master.received(create("b"), from: 2, now: 3)
        _ = master.received(create("before", opId: "op-0"), from: 1, now: 3) // a repeat: nothing applied
        XCTAssertEqual(master.lastSeq, 3)
        XCTAssertEqual(master.groupApplied.count, 2)
        // The commit fails (SQLite rolled the transaction back, as after SQLITE_FULL).
        try db.connection.execute("ROLLBACK")
        let commit = try db.detachGroupCommit()
        commit.run()
        let error = try XCTUnwrap(commit.error)
        db.finishGroupCommit(commit)
        let actions = master.groupFailed("\(error)", now: 4)
        XCTAssertEqual(master.lastSeq, 1, "the sequence is where the disk is")
        XCTAssertTrue(master.groupApplied.isEmpty)
        let toSlave = actions.compactMap { a -> String? in
            if case .send(1, let text) = a { return text.text }
            return nil
        }
        XCTAssertEqual(toSlave.count, 2, "\(toSlave)")
        XCTAssertTrue(toSlave[0].contains("storage_failed") && toSlave[0].contains("op-1"), toSlave[0])
        XCTAssertTrue(toSlave[1].contains("\"type\":\"result\"") && toSlave[1].contains("\"failed\":1"), toSlave[1])
        let toStorePOS = actions.compactMap { a -> String? in
            if case .send(2, let text) = a { return text.text }
            return nil
        }
        XCTAssertEqual(toStorePOS.count, 1)
        XCTAssertTrue(toStorePOS[0].contains("storage_failed"))
        XCTAssertFalse(actions.contains { if case .broadcast = $0 { return true } else { return false } })
        XCTAssertEqual(try db.allOrders().map(\.uuid), [u("before")])
        // A retry of the same operation id is applied now.
        _ = master.received(create("a", opId: "op-1"), from: 1, now: 5)
        XCTAssertEqual(master.lastSeq, 2)
        XCTAssertEqual(try db.journalEntry(opId: "op-1")?.seq, 2)
    }
}
