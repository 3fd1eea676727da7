import SyncCore
import XCTest

/// The stable seq (Docs/PROTOCOL.md 7.18): what a majority of the voters, the master included,
/// hold.
final class StableSeqTests: XCTestCase {
    func testAloneEveryCommittedEntryIsStable() {
        XCTAssertEqual(StableSeq.compute(masterSeq: 42, voterHeld: [], voters: 0), 42)
    }

    func testOneVoterMustHoldIt() {
        // Two members: a majority is both.
        XCTAssertEqual(StableSeq.compute(masterSeq: 42, voterHeld: [40], voters: 1), 40)
        XCTAssertEqual(StableSeq.compute(masterSeq: 42, voterHeld: [], voters: 1), 0)
    }

    func testMajorityOfThreeAndFive() {
        XCTAssertEqual(StableSeq.compute(masterSeq: 50, voterHeld: [45, 30], voters: 2), 45)
        XCTAssertEqual(StableSeq.compute(masterSeq: 50, voterHeld: [30], voters: 2), 30)
        XCTAssertEqual(StableSeq.compute(masterSeq: 50, voterHeld: [49, 48, 10, 5], voters: 4), 48)
        // Two of five voters not connected: three of five must still hold it.
        XCTAssertEqual(StableSeq.compute(masterSeq: 50, voterHeld: [49, 20], voters: 4), 20)
    }

    func testAHeldAboveTheMasterCountsAsTheMasters() {
        XCTAssertEqual(StableSeq.compute(masterSeq: 10, voterHeld: [12], voters: 1), 10)
    }
}
