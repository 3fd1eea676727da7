import FaultVFS
import Foundation
import SyncCore
import XCTest

@testable import OrderStore

/// Power cuts below SQLite (the fault VFS drops or tears every write not yet synced): what a
/// transaction acknowledged is on the disk, what was not disappears, and the store opens
/// intact (its `quick_check` at open passes).
final class PowerLossTests: FaultVFSStoreTestCase {
    /// The VFS really loses what was not synced: with `synchronous=OFF` (never the product's
    /// setting) a committed order is gone after a power cut, while the one committed before
    /// with `synchronous=FULL` is there. Without this, the tests below could pass on a VFS
    /// that loses nothing.
    func testACommitThatWasNeverSyncedIsLostAtAPowerCut() throws {
        let db = try openDatabase()
        let kept = try commitOrder(db, seq: 1)
        try db.connection.executeOnce("PRAGMA synchronous = OFF")
        let lost = try commitOrder(db, seq: 2)
        XCTAssertNotNil(try db.order(uuid: lost.uuid))
        XCTAssertGreaterThan(FaultVFS.unsyncedBytes(under: machine), 0)
        losePower(db, .drop)

        let reopened = try openDatabase()
        XCTAssertNotNil(try reopened.order(uuid: kept.uuid))
        XCTAssertNil(try reopened.order(uuid: lost.uuid), "an unsynced commit survived the power cut")
        XCTAssertEqual(try reopened.lastJournalSeq(), 1)
        XCTAssertEqual(FaultVFS.counters.powerCuts, 1)
        XCTAssertGreaterThan(FaultVFS.counters.bytesReverted, 0)
    }

    /// A database created and never synced loses its content: the next open makes a new one.
    func testAFileCreatedAndNeverSyncedLosesItsContent() throws {
        FaultVFS.arm(.lyingSync, on: .sync, under: machine, count: -1)
        let db = try openDatabase()
        _ = try commitOrder(db, seq: 1)
        losePower(db, .drop)
        FaultVFS.disarm()

        let reopened = try openDatabase()
        XCTAssertEqual(try reopened.orderCount(), 0)
        XCTAssertEqual(try reopened.lastJournalSeq(), 0)
    }

    /// Over many seeds: a few acknowledged commits, then one cut by a power failure at a
    /// seeded write or sync (inside the commit, or inside a checkpoint after it), dropping or
    /// tearing what was unsynced. After the restart every acknowledged order is there, the file
    /// passes `quick_check`, and the interrupted commit is absent, except when a torn cut kept
    /// every sector of it (allowed: "a commit that reported an error may still have reached
    /// the disk", `OrderDatabase`).
    func testEveryAcknowledgedCommitSurvivesAPowerCutAtAnyWriteOrSync() throws {
        let seeds: ClosedRange<UInt64> = 1...60
        var acknowledged = 0
        var interruptedKept = 0
        var interruptedLost = 0
        var cutDuringCheckpoint = 0
        let started = Date()
        for seed in seeds {
            let path = startSeed(seed)
            var rng = SplitMix(seed)
            let db = try OrderDatabase(path: path)
            var committed: [Order] = []
            for seq in 1...(1 + rng.next() % 6) {
                committed.append(try commitOrder(db, seq: Int64(seq), customer: String(repeating: "x", count: Int(rng.next() % 3000))))
            }
            let loss: FaultVFS.PowerLoss = rng.next() % 2 == 0 ? .drop : .tear
            let calls: FaultVFS.Calls = rng.next() % 3 == 0 ? .sync : .write
            FaultVFS.arm(.powerCut(loss), on: calls, under: machine, nth: Int(1 + rng.next() % 4))
            let duringCheckpoint = rng.next() % 3 == 0
            var interrupted: Order?
            do {
                if duringCheckpoint {
                    cutDuringCheckpoint += 1
                    try db.connection.executeOnce("PRAGMA wal_checkpoint(TRUNCATE)")
                }
                let next = makeOrder(customer: String(repeating: "y", count: Int(rng.next() % 5000)))
                interrupted = next
                try db.transaction {
                    try db.insertOrder(next)
                    try db.appendJournal(
                        JournalEntry(
                            seq: Int64(committed.count + 1), opId: "op-cut", origin: "local", operation: .create,
                            orderUUIDs: [next.uuid], message: Array("{}".utf8), recordedAtMillis: 0))
                }
                // The cut came later than this commit's last write: it is acknowledged.
                committed.append(next)
                interrupted = nil
                FaultVFS.powerCut(under: machine, loss)
            } catch {
                XCTAssertEqual(FaultVFS.counters.powerCuts, 1, "seed \(seed): failed without a power cut: \(error)")
            }
            restoreAfterArmedCut(db)
            FaultVFS.disarm()

            let reopened = try OrderDatabase(path: path)
            for order in committed {
                XCTAssertEqual(
                    try reopened.order(uuid: order.uuid)?.customerName, order.customerName,
                    "seed \(seed): an acknowledged order was lost")
            }
            if let interrupted {
                if try reopened.order(uuid: interrupted.uuid) != nil {
                    XCTAssertEqual(loss, .tear, "seed \(seed): a commit cut before its sync survived a drop")
                    interruptedKept += 1
                } else {
                    interruptedLost += 1
                }
            }
            XCTAssertEqual(try reopened.quickCheck(), [], "seed \(seed)")
            acknowledged += committed.count
            reopened.close()
        }
        let millis = Int(Date().timeIntervalSince(started) * 1000)
        print(
            "FIGURE power_cuts=\(seeds.count) acknowledged_checked=\(acknowledged) interrupted_lost=\(interruptedLost) "
                + "interrupted_kept=\(interruptedKept) cut_during_checkpoint=\(cutDuringCheckpoint) millis=\(millis)")
        XCTAssertGreaterThan(interruptedLost, 0, "no power cut interrupted a commit")
    }
}

/// A small seeded generator (splitmix64) for the tests' choices.
struct SplitMix {
    private var state: UInt64

    init(_ seed: UInt64) { state = seed }

    /// The next value.
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
