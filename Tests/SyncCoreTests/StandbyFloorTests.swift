import XCTest

@testable import SyncCore

/// `MasterEngine.Standby.holds` (Docs/PROTOCOL.md 7.19): a standby's `held` vouches only for
/// the seqs above the point its copy on this link started from (a snapshot's seq, or a
/// catch-up's start), and `ReplicationWaits` counts it only for those.
final class StandbyFloorTests: XCTestCase {
    private func standby(_ id: String, held: Int64?, floor: Int64) -> MasterEngine.Standby {
        var s = MasterEngine.Standby(peer: id.hashValue, terminalId: id, name: "till-\(id)", held: held)
        s.floor = floor
        return s
    }

    func testHeldVouchesOnlyAboveTheFloor() {
        let s = standby("1", held: 8, floor: 5)
        XCTAssertEqual((1...10).filter { s.holds(Int64($0)) }, [6, 7, 8])
        XCTAssertFalse(standby("1", held: nil, floor: 0).holds(1))
        XCTAssertTrue(standby("1", held: 1, floor: 0).holds(1))
    }

    func testAWriteAtOrBelowAStandbysFloorWaitsForAnother() throws {
        var waits = ReplicationWaits<String, Int>()
        let snapshotOnly = standby("1", held: 3, floor: 3)
        XCTAssertNil(waits.add(seq: 3, replicas: 1, standbys: [snapshotOnly], deadline: 100, answer: "c"))
        XCTAssertEqual(waits.heard([snapshotOnly]).count, 0)
        // A second standby that journalled it answers it.
        let journalled = standby("2", held: 3, floor: 2)
        let done = try XCTUnwrap(waits.heard([snapshotOnly, journalled]).first)
        XCTAssertTrue(done.replicated)
        XCTAssertEqual(done.heldBy, ["till-2"])
        // With none but the snapshot's, its deadline answers it unreplicated.
        XCTAssertNil(waits.add(seq: 3, replicas: 1, standbys: [snapshotOnly], deadline: 100, answer: "d"))
        XCTAssertEqual(waits.expired(now: 100).map(\.replicated), [false])
    }
}
