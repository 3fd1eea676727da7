import Foundation
import JSON
import SyncCore
import XCTest

@testable import OrderStore

/// A slave on SQLite takes a snapshot part by part (Docs/PROTOCOL.md 4.2.2): each part is
/// staged beside the replica in its own group, the replica stays as it was until the last part,
/// whose group switches to the staged orders in its COMMIT; a snapshot that never ends leaves
/// the old replica whole and usable.
final class StagedSnapshotEngineTests: XCTestCase {
    private var directory = ""
    private var db: OrderDatabase!

    override func setUpWithError() throws {
        directory = NSTemporaryDirectory() + "ordersync-staged-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        db = try OrderDatabase(path: directory + "/replica.sqlite")
    }

    override func tearDown() {
        db?.close()
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func uuid(_ n: Int) -> String { String(format: "5d1c6e2a-0b7f-4c4e-9a61-%012d", n) }

    private func orders(_ range: ClosedRange<Int>, name: String) -> [Order] {
        range.map { Order(uuid: uuid($0), customerName: "\(name) \($0)", created: OrderTimestamp(epochMillis: 1_000 + Int64($0))) }
    }

    /// Part `n` of `parts` of a snapshot at `seq`.
    private func part(_ n: Int, of parts: Int, seq: Int64, _ orders: [Order], applied: [String: Int64] = [:]) -> [UInt8] {
        var snap = SnapshotPart(seq: seq, part: n, parts: parts, epoch: "e", applied: applied)
        if n == parts { (snap.term, snap.termStarts) = (1, TermStarts()) }
        return ServerMessage.applied(operation: .create, orders: orders, seq: nil, opId: nil, origin: nil, snapshot: snap)
            .encodedBytes()
    }

    private func slave() throws -> SlaveEngine {
        try SlaveEngine(store: SQLiteSlaveStore(db: db), terminalId: "TILL-0001-AAAA", terminalName: "till-1", configuredStore: "s")
    }

    /// `bytes` received in a group of its own, committed like the node commits its batches.
    @discardableResult
    private func inGroup(_ slave: SlaveEngine, _ bytes: [UInt8]) throws -> [SlaveEngine.Action] {
        try db.beginGroup()
        let actions = slave.received(bytes, now: 1)
        try db.commitGroup()
        return actions
    }

    private func names() throws -> [String] { try db.allOrders().map(\.customerName).sorted() }

    /// A replica holding orders 1-3 ("old") at seq 5.
    private func oldReplica() throws -> SlaveEngine {
        let slave = try slave()
        _ = slave.linkOpened()
        try inGroup(slave, part(1, of: 1, seq: 5, orders(1...3, name: "old")))
        XCTAssertEqual(slave.lastSeq, 5)
        XCTAssertEqual(try names(), ["old 1", "old 2", "old 3"])
        return slave
    }

    func testPartsAreStagedBesideTheReplicaAndTheLastSwitchesEverythingInOneCommit() throws {
        let slave = try oldReplica()
        try inGroup(slave, part(1, of: 3, seq: 9, orders(11...14, name: "new")))
        try inGroup(slave, part(2, of: 3, seq: 9, orders(15...18, name: "new")))
        XCTAssertEqual(try db.stagedOrderCount(), 8)
        XCTAssertEqual(try names(), ["old 1", "old 2", "old 3"], "the replica is untouched until the last part")
        XCTAssertEqual(slave.lastSeq, 5)

        try db.beginGroup()
        let actions = slave.received(part(3, of: 3, seq: 9, orders(19...20, name: "new"), applied: [:]), now: 1)
        XCTAssertTrue(db.switchesAtGroupCommit, "the copy waits for the group's COMMIT")
        XCTAssertEqual(try names(), ["old 1", "old 2", "old 3"], "not copied on the caller's thread")
        let commit = try db.detachGroupCommit()
        commit.run()
        XCTAssertNil(commit.error)
        db.finishGroupCommit(commit)
        XCTAssertFalse(db.switchesAtGroupCommit)

        XCTAssertEqual(try db.allOrders().map(\.uuid).sorted(), (11...20).map(uuid))
        XCTAssertEqual(try db.stagedOrderCount(), 0, "the staging table is dropped with the switch")
        XCTAssertEqual(slave.lastSeq, 9)
        XCTAssertEqual(try db.metadata("replica.last_seq"), "9")
        XCTAssertEqual(try db.standbyBase(), 9, "the standby journal's new base, in the same commit")
        let received = actions.compactMap { action -> EngineLog? in
            if case .log(let l) = action, l.event == "snapshot.received" { return l }
            return nil
        }
        XCTAssertEqual(received.first?.metadata.first { $0.0 == "orders" }?.1, "10", "\(actions)")
    }

    func testALostLinkMidSnapshotLeavesTheOldReplicaAndAStrayPartEndsNothingElse() throws {
        let slave = try oldReplica()
        try inGroup(slave, part(1, of: 3, seq: 9, orders(11...14, name: "new")))
        try inGroup(slave, part(2, of: 3, seq: 9, orders(15...18, name: "new")))
        slave.linkClosed()
        XCTAssertEqual(try names(), ["old 1", "old 2", "old 3"])
        XCTAssertEqual(slave.lastSeq, 5)
        // The last part of the interrupted snapshot, on a new link: not the part expected.
        _ = slave.linkOpened()
        let stray = try inGroup(slave, part(3, of: 3, seq: 9, orders(19...20, name: "new")))
        XCTAssertTrue(stray.contains { if case .resync = $0 { return true } else { return false } }, "\(stray)")
        XCTAssertEqual(try names(), ["old 1", "old 2", "old 3"], "the old replica, whole and readable")
        XCTAssertEqual(try db.metadata("replica.last_seq"), "5")
        XCTAssertEqual(try db.standbyBase(), 5)
        // A snapshot sent whole afterwards replaces it as usual, and drops what was staged.
        try inGroup(slave, part(1, of: 2, seq: 12, orders(31...32, name: "later")))
        try inGroup(slave, part(2, of: 2, seq: 12, orders(33...33, name: "later")))
        XCTAssertEqual(try names(), ["later 31", "later 32", "later 33"])
        XCTAssertEqual(slave.lastSeq, 12)
    }

    func testASwitchThatFailsAtCommitRollsTheWholeGroupBack() throws {
        let slave = try oldReplica()
        try inGroup(slave, part(1, of: 2, seq: 9, orders(11...14, name: "new")))
        try db.beginGroup()
        _ = slave.received(part(2, of: 2, seq: 9, orders(15...16, name: "new")), now: 1)
        // The staged table vanishes before the COMMIT: the copy fails on the committing thread.
        try db.connection.executeOnce("DROP TABLE \(OrderDatabase.stagingTable)")
        let commit = try db.detachGroupCommit()
        commit.run()
        db.finishGroupCommit(commit)
        XCTAssertNotNil(commit.error)
        XCTAssertEqual(try names(), ["old 1", "old 2", "old 3"], "nothing of the group stays")
        XCTAssertEqual(try db.metadata("replica.last_seq"), "5")
        XCTAssertEqual(try db.standbyBase(), 5)
    }

    func testPendingLocalChangesGoOnTopOfTheStagedOrders() throws {
        let slave = try oldReplica()
        let rename = OperationMessage(
            operation: .update, orders: [.object(JSONObject([("uuid", .string(uuid(2))), ("customerName", .string("renamed here"))]))])
        let drop = OperationMessage(operation: .remove, orders: [.object(JSONObject([("uuid", .string(uuid(3)))]))])
        // Written here before the snapshot ends (each committed on its own, as the node does).
        let held = OperationMessage(
            operation: .update, orders: [.object(JSONObject([("uuid", .string(uuid(2))), ("customerName", .string("held here"))]))])
        for (m, id) in [(rename, "op-r"), (drop, "op-d"), (held, "op-held")] {
            try db.beginGroup()
            _ = slave.localWrite(m, opId: id, now: 1)
            try db.commitGroup()
        }
        XCTAssertEqual(slave.outboxCount, 3)
        try inGroup(slave, part(1, of: 2, seq: 9, orders(1...4, name: "new")))
        try inGroup(slave, part(2, of: 2, seq: 9, orders(5...5, name: "new"), applied: ["op-held": 8]))
        let stored = Dictionary(uniqueKeysWithValues: try db.allOrders().map { ($0.uuid, $0.customerName) })
        XCTAssertEqual(stored[uuid(2)], "renamed here", "the pending rename on top of the snapshot; not the one it holds")
        XCTAssertNil(stored[uuid(3)], "the pending remove on top of the snapshot")
        XCTAssertEqual(stored.count, 4)
        XCTAssertEqual(try db.outboxEntries().map(\.opId), ["op-r", "op-d"], "the entry the snapshot holds is answered")
    }
}
