import FaultVFS
import Foundation
import SyncCore
import XCTest

@testable import OrderStore

/// A slave's groups that only stage a snapshot's parts commit with `synchronous=NORMAL`
/// (`SynchronousLevel`, Docs/PROTOCOL.md 4.2.3): no sync, so a power cut may take the last of
/// them. On the fault VFS, which loses every write not synced at a cut: what such a cut takes is
/// staged rows only (the old replica, its position and its standby journal stay), the store
/// drops what was staged when it opens, and the next snapshot starts anew; the switch's FULL
/// COMMIT makes every staged part before it durable.
final class StagedSnapshotPowerLossTests: FaultVFSStoreTestCase {
    private func uuid(_ n: Int) -> String { String(format: "3b9d2f1e-6a4c-4f0b-8e7d-%012d", n) }

    private func orders(_ range: ClosedRange<Int>, name: String) -> [Order] {
        range.map { Order(uuid: uuid($0), customerName: "\(name) \($0)", created: OrderTimestamp(epochMillis: 1_000 + Int64($0))) }
    }

    /// Part `n` of `parts` of a snapshot at `seq`.
    private func part(_ n: Int, of parts: Int, seq: Int64, _ orders: [Order]) -> DecodedMasterMessage {
        var snap = SnapshotPart(seq: seq, part: n, parts: parts, epoch: "e")
        if n == parts { (snap.term, snap.termStarts) = (1, TermStarts()) }
        return DecodedMasterMessage(
            ServerMessage.applied(operation: .create, orders: orders, seq: nil, opId: nil, origin: nil, snapshot: snap)
                .encodedBytes())
    }

    private func slave(_ db: OrderDatabase) throws -> SlaveEngine {
        let slave = try SlaveEngine(
            store: SQLiteSlaveStore(db: db), terminalId: "TILL-0001-AAAA", terminalName: "till-1", configuredStore: "s")
        _ = slave.linkOpened()
        return slave
    }

    /// `message` received in a group of its own, begun as the node begins its batches (NORMAL
    /// when the engine says it only stages); returns the COMMIT's `synchronous`.
    @discardableResult
    private func inGroup(_ db: OrderDatabase, _ slave: SlaveEngine, _ message: DecodedMasterMessage) throws -> SynchronousLevel {
        try db.beginGroup(synchronous: slave.onlyStages(message) ? .normal : .full)
        _ = slave.received(message, now: 1)
        let commit = try db.detachGroupCommit()
        commit.run()
        if case .failure(let error) = db.finishGroupCommit(commit) { throw error }
        return commit.synchronous
    }

    private func names(_ db: OrderDatabase) throws -> [String] { try db.allOrders().map(\.customerName).sorted() }

    private func synchronousNow(_ db: OrderDatabase) throws -> Int64? { try db.connection.scalarInt("PRAGMA synchronous") }

    /// A replica holding orders 1-3 ("old") at seq 5, committed (FULL).
    private func oldReplica(_ db: OrderDatabase) throws -> SlaveEngine {
        let slave = try slave(db)
        XCTAssertEqual(try inGroup(db, slave, part(1, of: 1, seq: 5, orders(1...3, name: "old"))), .full)
        XCTAssertEqual(FaultVFS.unsyncedBytes(under: machine), 0, "the replica's snapshot is synced")
        return slave
    }

    func testOnlyStagingGroupsCommitUnsyncedAndTheSwitchSyncsThemWithItself() throws {
        let db = try openDatabase()
        let slave = try oldReplica(db)
        XCTAssertEqual(try inGroup(db, slave, part(1, of: 3, seq: 9, orders(11...200, name: "new"))), .normal)
        XCTAssertGreaterThan(FaultVFS.unsyncedBytes(under: machine), 0, "a staging-only COMMIT synced the log")
        XCTAssertEqual(try synchronousNow(db), 2, "the connection is FULL again after the group")
        XCTAssertEqual(try inGroup(db, slave, part(2, of: 3, seq: 9, orders(201...400, name: "new"))), .normal)
        // A write outside the groups in between: FULL, as every other transaction.
        try db.setMetadata("test.outside", "1")
        XCTAssertEqual(FaultVFS.unsyncedBytes(under: machine), 0, "a write outside the groups is synced, and the log with it")
        XCTAssertEqual(try inGroup(db, slave, part(3, of: 3, seq: 9, orders(401...500, name: "new"))), .full, "the switch")
        losePower(db, .drop)

        let reopened = try openDatabase()
        XCTAssertEqual(try reopened.orderCount(), 490, "every staged part is in the switched replica")
        XCTAssertEqual(try reopened.metadata("replica.last_seq"), "9")
        XCTAssertEqual(try reopened.quickCheck(), [])
    }

    func testAPowerCutMidSnapshotLeavesTheOldReplicaAndTheSnapshotIsTakenAnew() throws {
        let db = try openDatabase()
        _ = try oldReplica(db)
        let first = try slave(db)
        XCTAssertEqual(try inGroup(db, first, part(1, of: 3, seq: 9, orders(11...200, name: "new"))), .normal)
        // A checkpoint syncs the log first (NORMAL: "the WAL file is synchronized before each
        // checkpoint"): part 1 is on the disk now, the next part is not.
        try db.connection.executeOnce("PRAGMA wal_checkpoint(PASSIVE)")
        XCTAssertEqual(try inGroup(db, first, part(2, of: 3, seq: 9, orders(201...400, name: "new"))), .normal)
        XCTAssertGreaterThan(FaultVFS.unsyncedBytes(under: machine), 0)
        losePower(db, .drop)
        XCTAssertGreaterThan(FaultVFS.counters.bytesReverted, 0, "the cut took nothing: the test proves nothing")

        let reopened = try openDatabase()
        XCTAssertEqual(try reopened.quickCheck(), [])
        XCTAssertEqual(try names(reopened), ["old 1", "old 2", "old 3"], "the old replica, whole")
        XCTAssertEqual(try reopened.metadata("replica.last_seq"), "5")
        XCTAssertEqual(try reopened.standbyBase(), 5)
        XCTAssertEqual(try reopened.stagedOrderCount(), 0, "what was staged before the cut is dropped at open")
        // The restarted slave: the interrupted snapshot's next part is not taken; a new one is.
        let restarted = try slave(reopened)
        XCTAssertEqual(restarted.lastSeq, 5)
        _ = try inGroup(reopened, restarted, part(3, of: 3, seq: 9, orders(401...500, name: "new")))
        XCTAssertEqual(try names(reopened), ["old 1", "old 2", "old 3"])
        XCTAssertEqual(try inGroup(reopened, restarted, part(1, of: 2, seq: 12, orders(11...300, name: "anew"))), .normal)
        XCTAssertEqual(try inGroup(reopened, restarted, part(2, of: 2, seq: 12, orders(301...400, name: "anew"))), .full)
        XCTAssertEqual(try reopened.orderCount(), 390)
        XCTAssertEqual(restarted.lastSeq, 12)
        XCTAssertEqual(try reopened.stagedOrderCount(), 0)
        reopened.close()
    }

    func testOnlyASnapshotPartBeforeTheLastOnlyStages() throws {
        let db = try openDatabase()
        let slave = try slave(db)
        XCTAssertTrue(slave.onlyStages(part(1, of: 3, seq: 9, orders(1...2, name: "n"))))
        XCTAssertTrue(slave.onlyStages(part(2, of: 3, seq: 9, orders(1...2, name: "n"))))
        XCTAssertFalse(slave.onlyStages(part(3, of: 3, seq: 9, orders(1...2, name: "n"))), "the last part switches")
        XCTAssertFalse(slave.onlyStages(part(1, of: 1, seq: 9, orders(1...2, name: "n"))), "a single part switches")
        let broadcast = ServerMessage.applied(
            operation: .create, orders: orders(1...1, name: "b"), seq: 6, opId: nil, origin: nil, snapshot: nil)
        XCTAssertFalse(slave.onlyStages(DecodedMasterMessage(broadcast.encodedBytes())), "an applied change")
        XCTAssertFalse(slave.onlyStages(DecodedMasterMessage(Array(#"{"type":"heartbeat","seq":7}"#.utf8))))
        XCTAssertFalse(slave.onlyStages(DecodedMasterMessage(Array(#"{"type":"ready","seq":7,"epoch":"e"}"#.utf8))))
        db.close()
    }
}
