import Foundation
import SyncCore
import XCTest

@testable import OrderStore

/// Compaction keeps what a roll-up on the terminal has not shipped to head office
/// (`RollupFacts.shippedSeq`), within `RollupFacts.keepMost`.
final class RollupRetentionTests: RetentionTestCase {
    /// Six entries, every terminal past them, all older than the history horizon.
    private func sixOldEntries() throws -> (OrderDatabase, MasterEngine, Int64) {
        let (db, master) = try makeMaster()
        _ = hello(master, peer: 1, lastSeq: 0, epoch: nil, now: t0)
        for n in 0..<6 { _ = master.apply(create(UUID().uuidString.lowercased()), origin: "m", now: t0 + Int64(n)) }
        _ = master.received(ClientMessage.encodeAck(seq: 6), from: 1, now: t0 + 10)
        master.journalKeepNewest = 1
        return (db, master, t0 + 31 * day)
    }

    func testWithoutARollupTheOldEntriesGo() throws {
        let (db, master, later) = try sixOldEntries()
        _ = master.maintenance(now: later)
        XCTAssertEqual(try db.firstJournalSeq(), 6)
    }

    func testEntriesHeadOfficeLacksStay() throws {
        let (db, master, later) = try sixOldEntries()
        master.rollup.shippedSeq = 2
        _ = master.maintenance(now: later)
        XCTAssertEqual(try db.firstJournalSeq(), 3, "entries after head office's checkpoint stay")
    }

    func testTheCapStillBoundsTheJournal() throws {
        let (db, master, later) = try sixOldEntries()
        master.rollup.shippedSeq = 0
        master.rollup.keepMost = 2
        _ = master.maintenance(now: later)
        XCTAssertEqual(try db.firstJournalSeq(), 5, "at most keepMost entries are kept for a lagging roll-up")
    }
}
