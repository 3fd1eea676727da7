import XCTest

@testable import SyncCore

/// Automatic failover's pure rules (Docs/PROTOCOL.md, "Automatic failover"): when a voter
/// stands, the stagger and jitter, the pre-vote refusal while the master is heard, and the
/// master's lease running out and coming back.
final class AutoFailoverTests: XCTestCase {
    /// No jitter, so the figures are exact.
    let exact = AutoFailoverTiming(leaseMillis: 3_000, marginMillis: 500, staggerStepMillis: 150, maxRank: 4, jitterMillis: 0)

    func testAVoterStandsOnlyAfterTheLeasePlusTheMargin() {
        var auto = AutoFailover(timing: exact, rank: 0, seed: 1, nowMillis: 1_000)
        XCTAssertEqual(auto.standAfterMillis, 3_500)
        XCTAssertNil(auto.tick(nowMillis: 4_000), "3 s of silence is the lease, not the election timeout")
        XCTAssertNil(auto.tick(nowMillis: 4_500), "exactly the timeout is not longer than it")
        XCTAssertEqual(auto.tick(nowMillis: 4_501), .standForElection(silentMillis: 3_501))
        XCTAssertTrue(auto.isStanding)
        XCTAssertNil(auto.tick(nowMillis: 9_000), "one candidacy at a time")
    }

    func testHearingTheMasterPostponesTheCandidacy() {
        var auto = AutoFailover(timing: exact, rank: 0, seed: 1, nowMillis: 0)
        for t in stride(from: Int64(1_000), through: 20_000, by: 1_000) {
            auto.heard(atMillis: t)
            XCTAssertNil(auto.tick(nowMillis: t + 999), "heard every second, it never stands")
        }
        auto.heard(atMillis: 5_000)
        XCTAssertEqual(auto.lastHeardMillis, 20_000, "a late report does not move the last time heard back")
        XCTAssertNil(auto.tick(nowMillis: 23_500))
        XCTAssertNotNil(auto.tick(nowMillis: 23_501))
    }

    func testAWithdrawnCandidacyWaitsAFullTimeoutAgain() {
        var auto = AutoFailover(timing: exact, rank: 0, seed: 1, nowMillis: 0)
        XCTAssertNotNil(auto.tick(nowMillis: 3_501))
        auto.heard(atMillis: 3_600)
        XCTAssertTrue(auto.isStanding, "hearing does not end a candidacy")
        auto.candidacyEnded(nowMillis: 14_000)
        XCTAssertFalse(auto.isStanding)
        XCTAssertNil(auto.tick(nowMillis: 17_500))
        XCTAssertEqual(auto.tick(nowMillis: 17_501), .standForElection(silentMillis: 3_501))
    }

    func testTheMostCurrentVoterStandsFirstAndEqualsDiffer() {
        XCTAssertEqual(AutoFailover.rank(lagEntries: 0, placeAmongVoters: 0), 0)
        XCTAssertEqual(AutoFailover.rank(lagEntries: 1, placeAmongVoters: 0), 1)
        XCTAssertEqual(AutoFailover.rank(lagEntries: 500, placeAmongVoters: 1), 3, "the lag counts at most 2 steps")
        let first = AutoFailover(timing: exact, rank: 0, seed: 7, nowMillis: 0)
        let behind = AutoFailover(timing: exact, rank: AutoFailover.rank(lagEntries: 3, placeAmongVoters: 0), seed: 7, nowMillis: 0)
        let far = AutoFailover(timing: exact, rank: 99, seed: 7, nowMillis: 0)
        XCTAssertEqual(first.standAfterMillis, 3_500)
        XCTAssertEqual(behind.standAfterMillis, 3_800)
        XCTAssertEqual(far.standAfterMillis, 3_500 + 4 * 150, "the stagger is capped")
        var catching = behind
        catching.rerank(0, seed: 7)
        XCTAssertEqual(catching.standAfterMillis, 3_500, "a voter that caught up goes first again")
    }

    func testTheJitterIsSeededAndBounded() {
        let timing = AutoFailoverTiming.standard
        let delays = (0..<200).map { AutoFailover.delay(timing: timing, rank: 0, seed: UInt64($0)) }
        XCTAssertTrue(delays.allSatisfy { (0..<timing.jitterMillis).contains($0) }, "\(delays)")
        XCTAssertGreaterThan(Set(delays).count, 20, "seeds spread over the range")
        XCTAssertEqual(
            AutoFailover.delay(timing: timing, rank: 2, seed: 42), AutoFailover.delay(timing: timing, rank: 2, seed: 42),
            "the same seed gives the same jitter")
        XCTAssertEqual(AutoFailover.delay(timing: timing, rank: 2, seed: 42) - AutoFailover.delay(timing: timing, rank: 0, seed: 42), 3_000)
        // The first voter of the defaults stands well within 5 s of its master going silent.
        XCTAssertLessThan(timing.electionTimeoutMillis + timing.jitterMillis, 4_000)
    }

    func testAnAutomaticPreVoteIsRefusedWhileTheMasterIsHeardWithinTheElectionTimeout() {
        var auto = AutoFailover(timing: exact, rank: 0, seed: 1, nowMillis: 0)
        auto.heard(atMillis: 10_000)
        XCTAssertFalse(auto.grantsAutomaticPreVote(nowMillis: 10_000))
        XCTAssertFalse(auto.grantsAutomaticPreVote(nowMillis: 12_999), "heard 2.999 s ago: the master is healthy")
        XCTAssertFalse(
            auto.grantsAutomaticPreVote(nowMillis: 13_499), "past the lease, but the master may have heard this voter a heartbeat later")
        XCTAssertTrue(auto.grantsAutomaticPreVote(nowMillis: 13_500), "silent for the lease and the margin")
        XCTAssertEqual(AutoFailoverTiming.standard.heartbeatMillis, 250)
        XCTAssertLessThanOrEqual(
            AutoFailoverTiming.standard.heartbeatMillis * 2, AutoFailoverTiming.standard.marginMillis,
            "the margin covers a heartbeat's gap and as much again for delays")
        XCTAssertNil(auto.tick(nowMillis: 13_500))
        XCTAssertNotNil(auto.tick(nowMillis: 13_501))
        XCTAssertTrue(auto.isStanding)
        XCTAssertTrue(auto.grantsAutomaticPreVote(nowMillis: 13_600), "a voter that stands has no master it keeps")
    }

    // MARK: - The master's lease

    func testTheLeaseNeedsAMajorityWithTheMasterAndLapsesAfterTheLease() {
        var lease = MasterLease(leaseMillis: 3_000, voters: ["M", "A", "B"], ownId: "M")
        XCTAssertEqual(lease.majority, 2)
        XCTAssertFalse(lease.isHeld, "a master starts lapsed")
        XCTAssertNil(lease.tick(nowMillis: 0))
        XCTAssertNil(lease.heard(from: "pos-app", atMillis: 100), "a non-voter does not count")
        XCTAssertEqual(lease.heard(from: "A", atMillis: 100), .regained(heard: 2, majority: 2))
        XCTAssertTrue(lease.isHeld)
        XCTAssertNil(lease.heard(from: "B", atMillis: 2_000))
        XCTAssertNil(lease.tick(nowMillis: 3_099), "B still heard, A's message within the lease")
        XCTAssertNil(lease.tick(nowMillis: 4_999), "B alone with the master is a majority")
        XCTAssertEqual(lease.tick(nowMillis: 5_000), .lapsed(heard: 1, majority: 2))
        XCTAssertFalse(lease.isHeld)
        XCTAssertNil(lease.tick(nowMillis: 9_000))
        XCTAssertEqual(lease.heard(from: "B", atMillis: 9_100), .regained(heard: 2, majority: 2), "it comes back")
        XCTAssertTrue(lease.isHeld)
    }

    func testFiveVotersNeedTwoOthersAndARevokedVoterStopsCounting() {
        var lease = MasterLease(leaseMillis: 3_000, voters: ["M", "A", "B", "C", "D"], ownId: "M")
        XCTAssertEqual(lease.majority, 3)
        XCTAssertNil(lease.heard(from: "A", atMillis: 0))
        XCTAssertEqual(lease.heard(from: "B", atMillis: 10), .regained(heard: 3, majority: 3))
        XCTAssertEqual(
            lease.votersChanged(["M", "A", "C", "D"], ownId: "M", nowMillis: 20), .lapsed(heard: 2, majority: 3),
            "B revoked: 2 of 4 is no majority")
        XCTAssertEqual(lease.heard(from: "C", atMillis: 30), .regained(heard: 3, majority: 3))
    }
}
