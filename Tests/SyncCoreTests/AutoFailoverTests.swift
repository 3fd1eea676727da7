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
        XCTAssertEqual(AutoFailover.rank(currency: .current, placeAmongVoters: 0, votingSlaves: 3), 0)
        XCTAssertEqual(AutoFailover.rank(currency: .current, placeAmongVoters: 2, votingSlaves: 3), 2)
        XCTAssertEqual(AutoFailover.rank(currency: .behindMaster, placeAmongVoters: 0, votingSlaves: 3), 3)
        let first = AutoFailover(timing: exact, rank: 0, seed: 7, nowMillis: 0)
        let behind = AutoFailover(
            timing: exact, rank: AutoFailover.rank(currency: .behindMaster, placeAmongVoters: 0, votingSlaves: 2), seed: 7, nowMillis: 0)
        let far = AutoFailover(timing: exact, rank: 99, seed: 7, nowMillis: 0)
        XCTAssertEqual(first.standAfterMillis, 3_500)
        XCTAssertEqual(behind.standAfterMillis, 3_800)
        XCTAssertEqual(far.standAfterMillis, 3_500 + 4 * 150, "the stagger is capped")
        var catching = behind
        catching.rerank(0, seed: 7)
        XCTAssertEqual(catching.standAfterMillis, 3_500, "a voter that caught up goes first again")
    }

    /// Cause 2 of Docs/PERFORMANCE.md's automatic failover: with the rank `min(lag, 2) + place`,
    /// a voter one entry behind at place 0 and a current one at place 1 tied (both 1) and stood
    /// together. How current a voter is now dominates; the place breaks ties among equals.
    func testHowCurrentAVoterIsDominatesAndNoTwoVotersTie() {
        XCTAssertNotEqual(
            AutoFailover.rank(currency: .behindMaster, placeAmongVoters: 0, votingSlaves: 3),
            AutoFailover.rank(currency: .current, placeAmongVoters: 1, votingSlaves: 3))
        for slaves in 1...4 {
            var seen: [Int: (AutoFailover.Currency, Int)] = [:]
            for currency in [AutoFailover.Currency.current, .behindMaster, .behindMajority] {
                for place in 0..<slaves {
                    let rank = AutoFailover.rank(currency: currency, placeAmongVoters: place, votingSlaves: slaves)
                    XCTAssertNil(seen[rank], "\(slaves) slaves: \(currency) at \(place) ties \(String(describing: seen[rank]))")
                    seen[rank] = (currency, place)
                    for other in 0..<slaves {
                        for worse in [AutoFailover.Currency.current, .behindMaster, .behindMajority] where worse > currency {
                            XCTAssertLessThan(
                                rank, AutoFailover.rank(currency: worse, placeAmongVoters: other, votingSlaves: slaves),
                                "a more current voter stands before any less current one, whatever their places")
                        }
                    }
                }
            }
        }
    }

    func testHowCurrentIsJudgedAgainstWhatEveryVoterWasTold() {
        XCTAssertEqual(AutoFailover.Currency(lastSeq: 10, masterSeq: 10, stableSeq: 8), .current)
        XCTAssertEqual(AutoFailover.Currency(lastSeq: 9, masterSeq: 10, stableSeq: 8), .behindMaster)
        XCTAssertEqual(AutoFailover.Currency(lastSeq: 8, masterSeq: 10, stableSeq: 8), .behindMaster)
        XCTAssertEqual(AutoFailover.Currency(lastSeq: 7, masterSeq: 10, stableSeq: 8), .behindMajority)
        // Not every voter is ever behind a majority: the stable seq is what a majority holds,
        // so the farthest deferral never delays them all.
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            let masterSeq = Int64.random(in: 5...20, using: &rng)
            let held = (0..<3).map { _ in Int64.random(in: 0...masterSeq, using: &rng) }
            let stable = StableSeq.compute(masterSeq: masterSeq, voterHeld: held, voters: 3)
            let classes = held.map { AutoFailover.Currency(lastSeq: $0, masterSeq: masterSeq, stableSeq: stable) }
            XCTAssertTrue(classes.contains { $0 != .behindMajority }, "\(held) of \(masterSeq), stable \(stable)")
        }
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
        XCTAssertEqual(AutoFailoverTiming.standard.heartbeatMillis, 208)
        // Docs/PROTOCOL.md 7.14: the heartbeat and both timers' 100 ms fit in the margin, with
        // 92 ms left for the link's delay (a LAN's is under a few ms).
        XCTAssertLessThan(AutoFailoverTiming.standard.heartbeatMillis + 2 * 100 + 90, AutoFailoverTiming.standard.marginMillis)
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
        XCTAssertNil(lease.heard(from: "pos-app", atMillis: 100, nowMillis: 100), "a non-voter does not count")
        XCTAssertEqual(lease.heard(from: "A", atMillis: 100, nowMillis: 100), .regained(heard: 2, majority: 2))
        XCTAssertTrue(lease.isHeld)
        XCTAssertNil(lease.heard(from: "B", atMillis: 2_000, nowMillis: 2_000))
        XCTAssertNil(lease.tick(nowMillis: 3_099), "B still heard, A's message within the lease")
        XCTAssertNil(lease.tick(nowMillis: 4_999), "B alone with the master is a majority")
        XCTAssertEqual(lease.tick(nowMillis: 5_000), .lapsed(heard: 1, majority: 2))
        XCTAssertFalse(lease.isHeld)
        XCTAssertNil(lease.tick(nowMillis: 9_000))
        XCTAssertEqual(lease.heard(from: "B", atMillis: 9_100, nowMillis: 9_100), .regained(heard: 2, majority: 2), "it comes back")
        XCTAssertTrue(lease.isHeld)
    }

    /// The lease flap of a cut master: its links stay open, and each tick reported their last
    /// frames, heard long ago. Judged at that past instant the lease came back (and the held
    /// messages were sent again) only to lapse at the tick: `lease.lapsed`/`lease.regained`
    /// every 100 ms. Judged now, it stays lapsed.
    func testAFrameHeardLongAgoDoesNotBringTheLeaseBack() {
        var lease = MasterLease(leaseMillis: 2_500, voters: ["M", "A", "B"], ownId: "M")
        XCTAssertEqual(lease.heard(from: "A", atMillis: 1_000, nowMillis: 1_000), .regained(heard: 2, majority: 2))
        XCTAssertEqual(lease.tick(nowMillis: 3_500), .lapsed(heard: 1, majority: 2))
        for now in stride(from: Int64(3_600), through: 6_000, by: 100) {
            XCTAssertNil(lease.heard(from: "A", atMillis: 1_000, nowMillis: now), "A's last frame is 1 s old at \(now)")
            XCTAssertNil(lease.heard(from: "B", atMillis: 900, nowMillis: now))
            XCTAssertNil(lease.tick(nowMillis: now))
            XCTAssertFalse(lease.isHeld)
        }
        XCTAssertEqual(lease.heard(from: "B", atMillis: 6_050, nowMillis: 6_100), .regained(heard: 2, majority: 2), "a fresh frame")
    }

    func testFiveVotersNeedTwoOthersAndARevokedVoterStopsCounting() {
        var lease = MasterLease(leaseMillis: 3_000, voters: ["M", "A", "B", "C", "D"], ownId: "M")
        XCTAssertEqual(lease.majority, 3)
        XCTAssertNil(lease.heard(from: "A", atMillis: 0, nowMillis: 0))
        XCTAssertEqual(lease.heard(from: "B", atMillis: 10, nowMillis: 10), .regained(heard: 3, majority: 3))
        XCTAssertEqual(
            lease.votersChanged(["M", "A", "C", "D"], ownId: "M", nowMillis: 20), .lapsed(heard: 2, majority: 3),
            "B revoked: 2 of 4 is no majority")
        XCTAssertEqual(lease.heard(from: "C", atMillis: 30, nowMillis: 30), .regained(heard: 3, majority: 3))
    }
}
