import XCTest

@testable import SyncCore

/// The candidate's state machine (design.md, "Promotion" steps 3 to 5).
final class CandidacyTests: XCTestCase {
    /// The old master M, the candidate A, and the slaves B, C, D: five voters, a majority of 3.
    let five = ["M": "master", "A": "till-a", "B": "till-b", "C": "till-c", "D": "till-d"]
    let own = LogPosition(lastSeq: 10, lastTerm: 1)

    func candidacy(voters: [String: String]? = nil, isVoter: Bool = true, force: Bool = false, term: Int64 = 3) -> Candidacy {
        Candidacy(
            .init(term: term, nodeId: "A", name: "till-a", position: own, isVoter: isVoter, voters: voters ?? five, force: force))
    }

    func report(_ actions: [Candidacy.Action], file: StaticString = #filePath, line: UInt = #line) -> PromotionReport? {
        guard actions.count == 1 else {
            XCTFail("expected one final action, got \(actions)", file: file, line: line)
            return nil
        }
        switch actions[0] {
        case .becomeMaster(let r), .withdraw(let r): return r
        default:
            XCTFail("expected becomeMaster or withdraw, got \(actions[0])", file: file, line: line)
            return nil
        }
    }

    func testAMajorityOfPreVotesPersistsTheOwnVoteBeforeAnyPromiseThenFetchesFromTheMostAdvanced() {
        var c = candidacy()
        XCTAssertEqual(c.majority, 3)
        XCTAssertEqual(c.start(), [.armDeadline(afterMillis: Candidacy.deadlineMillis)])
        XCTAssertEqual(c.preVote(from: "B", lastSeq: 9, lastTerm: 1), [], "two of five is no majority")
        XCTAssertFalse(c.hasVoted)
        XCTAssertEqual(
            c.preVote(from: "C", lastSeq: 12, lastTerm: 1),
            [.persistOwnVote(TermVote(term: 3, nodeId: "A")), .sendPromise(to: "B"), .sendPromise(to: "C")])
        XCTAssertTrue(c.hasVoted)
        XCTAssertEqual(c.voteGranted(from: "B", lastSeq: 9, lastTerm: 1), [], "C has not answered yet")
        XCTAssertEqual(
            c.voteGranted(from: "C", lastSeq: 12, lastTerm: 1),
            [.fetch(from: "C", after: 10), .armDeadline(afterMillis: Candidacy.fetchMillis)])
        XCTAssertEqual(c.voteGranted(from: "D", lastSeq: 99, lastTerm: 1), [], "nobody asked D")
        let done = c.fetched(upTo: 12)
        guard let r = report(done) else { return }
        guard case .becomeMaster = done[0] else { return XCTFail("\(done)") }
        XCTAssertEqual(
            r,
            PromotionReport(
                term: 3, seq: 12, voters: ["master", "till-a", "till-b", "till-c", "till-d"],
                promised: ["till-a", "till-b", "till-c"], unreachable: ["master", "till-d"],
                fetched: .init(from: "till-c", entries: 2)))
        XCTAssertEqual(c.outcome, r)
        XCTAssertEqual(c.deadlinePassed(), [], "a finished candidacy ignores everything")
        XCTAssertEqual(c.preVote(from: "D", lastSeq: 1, lastTerm: 1), [])
    }

    func testNobodyAheadBecomesMasterWithoutAFetch() {
        var c = candidacy(voters: ["M": "master", "A": "till-a", "B": "till-b"])
        _ = c.start()
        XCTAssertEqual(c.preVote(from: "B", lastSeq: 10, lastTerm: 1).count, 2)
        let r = report(c.voteGranted(from: "B", lastSeq: 10, lastTerm: 1))
        XCTAssertEqual(r?.promoted, true)
        XCTAssertEqual(r?.seq, 10)
        XCTAssertNil(r?.fetched)
        XCTAssertEqual(r?.unreachable, ["master"])
    }

    func testTheMostAdvancedIsByTermThenSeqAndTiesGoToTheLowestId() {
        var c = candidacy()
        _ = c.start()
        _ = c.preVote(from: "D", lastSeq: 30, lastTerm: 1)
        _ = c.preVote(from: "C", lastSeq: 15, lastTerm: 2)
        _ = c.preVote(from: "B", lastSeq: 15, lastTerm: 2)
        XCTAssertEqual(c.voteGranted(from: "D", lastSeq: 30, lastTerm: 1), [])
        XCTAssertEqual(c.voteGranted(from: "C", lastSeq: 15, lastTerm: 2), [])
        XCTAssertEqual(
            c.voteGranted(from: "B", lastSeq: 15, lastTerm: 2), [.fetch(from: "B", after: 10), .armDeadline(afterMillis: 3000)],
            "term 2 beats the longer term-1 journal; B and C tie, B is the lower id")
        XCTAssertEqual(
            report(c.fetched(upTo: 15))?.seq, 15, "C is no further ahead than B; D's longer term-1 journal is behind")
    }

    func testAFailedFetchTriesTheNextVoterAheadAndWithdrawsWhenNoneIsLeft() {
        var c = candidacy()
        _ = c.start()
        _ = c.preVote(from: "B", lastSeq: 11, lastTerm: 1)
        _ = c.preVote(from: "C", lastSeq: 12, lastTerm: 1)
        _ = c.voteGranted(from: "B", lastSeq: 11, lastTerm: 1)
        XCTAssertEqual(c.voteGranted(from: "C", lastSeq: 12, lastTerm: 1).first, .fetch(from: "C", after: 10))
        XCTAssertEqual(c.linkLost(from: "C").first, .fetch(from: "B", after: 10), "the fetch source's link closed")
        let withdrawn = c.deadlinePassed()
        guard case .withdraw(let r) = withdrawn.first else { return XCTFail("\(withdrawn)") }
        XCTAssertEqual(r.refusal?.code, .fetchFailed)
        XCTAssertFalse(r.promoted)
        XCTAssertTrue(c.hasVoted, "the own vote was persisted")
    }

    func testAShortFetchGoesOnFromTheNextVoterAheadOfWhatArrived() {
        var c = candidacy()
        _ = c.start()
        _ = c.preVote(from: "B", lastSeq: 20, lastTerm: 1)
        _ = c.preVote(from: "C", lastSeq: 14, lastTerm: 1)
        _ = c.voteGranted(from: "C", lastSeq: 14, lastTerm: 1)
        XCTAssertEqual(c.voteGranted(from: "B", lastSeq: 20, lastTerm: 1).first, .fetch(from: "B", after: 10))
        XCTAssertEqual(c.fetched(upTo: 12).first, .fetch(from: "C", after: 12), "B sent less than it holds; C is ahead of 12")
        let r = report(c.fetched(upTo: 14))
        XCTAssertEqual(r?.seq, 14)
        XCTAssertEqual(r?.fetched, .init(from: "till-c", entries: 4))
    }

    func testNoMajorityByTheDeadlineWithdrawsHavingPersistedNothing() {
        var c = candidacy()
        _ = c.start()
        XCTAssertEqual(c.preVote(from: "B", lastSeq: 9, lastTerm: 1), [])
        let actions = c.deadlinePassed()
        XCTAssertFalse(actions.contains(.persistOwnVote(TermVote(term: 3, nodeId: "A"))))
        guard let r = report(actions), case .withdraw = actions[0] else { return XCTFail("\(actions)") }
        XCTAssertEqual(r.refusal?.code, .noMajority)
        XCTAssertEqual(r.promised, [])
        XCTAssertEqual(r.unreachable, ["master", "till-c", "till-d"])
        XCTAssertTrue(r.refusal?.message.hasPrefix("2 of 5 voters were reachable, 3 needed") == true, r.refusal?.message ?? "")
        XCTAssertFalse(c.hasVoted)
    }

    func testRefusalsAndLostLinksBelowAMajorityWithdraw() {
        var c = candidacy()
        _ = c.start()
        _ = c.preVote(from: "B", lastSeq: 9, lastTerm: 1)
        _ = c.preVote(from: "C", lastSeq: 9, lastTerm: 1)
        XCTAssertEqual(c.voteRefused(from: "B", reason: "voted for D in term 3"), [])
        let actions = c.linkLost(from: "C")
        guard let r = report(actions), case .withdraw = actions[0] else { return XCTFail("\(actions)") }
        XCTAssertEqual(r.refusal?.code, .noMajority)
        XCTAssertEqual(r.promised, ["till-a"])
        XCTAssertEqual(r.refused, [.init(name: "till-b", reason: "voted for D in term 3")])
        XCTAssertEqual(r.unreachable, ["master", "till-c", "till-d"])
    }

    func testForceGoesOnWithWhoeverPromisedEvenNobody() {
        var two = candidacy(voters: ["M": "master", "A": "till-a"], force: true)
        XCTAssertEqual(two.majority, 2, "two voters: the two-node problem")
        _ = two.start()
        let actions = two.deadlinePassed()
        XCTAssertEqual(actions.count, 3)
        XCTAssertEqual(Array(actions.prefix(2)), [.forced(unreachable: ["master"]), .persistOwnVote(TermVote(term: 3, nodeId: "A"))])
        guard case .becomeMaster(let r) = actions.last else { return XCTFail("\(actions)") }
        XCTAssertTrue(r.forced)
        XCTAssertEqual(r.promised, ["till-a"])

        var five = candidacy(force: true)
        _ = five.start()
        _ = five.preVote(from: "B", lastSeq: 13, lastTerm: 1)
        XCTAssertEqual(
            five.deadlinePassed(),
            [
                .forced(unreachable: ["master", "till-c", "till-d"]), .persistOwnVote(TermVote(term: 3, nodeId: "A")),
                .sendPromise(to: "B"),
            ])
        XCTAssertEqual(five.voteGranted(from: "B", lastSeq: 13, lastTerm: 1).first, .fetch(from: "B", after: 10))
        XCTAssertEqual(report(five.fetchFailed())?.forced, true, "forced: a failed fetch does not stop it")
    }

    func testTheDeadlineWaitsOnceForPromisesOnTheirWay() {
        var c = candidacy()
        _ = c.start()
        _ = c.preVote(from: "B", lastSeq: 9, lastTerm: 1)
        _ = c.preVote(from: "C", lastSeq: 9, lastTerm: 1)
        XCTAssertEqual(c.deadlinePassed(), [.armDeadline(afterMillis: Candidacy.voteGraceMillis)])
        XCTAssertEqual(c.voteGranted(from: "B", lastSeq: 9, lastTerm: 1), [])
        let actions = c.deadlinePassed()
        guard let r = report(actions), case .withdraw = actions[0] else { return XCTFail("\(actions)") }
        XCTAssertEqual(r.promised, ["till-a", "till-b"])
        XCTAssertEqual(r.unreachable, ["master", "till-c", "till-d"])
    }

    func testALatePreVoterIsAskedTooAndNonVotersAreNotCounted() {
        var c = candidacy(voters: ["M": "master", "A": "till-a", "B": "till-b", "C": "till-c"])
        _ = c.start()
        XCTAssertEqual(c.preVote(from: "H", lastSeq: 50, lastTerm: 1), [], "a handheld does not vote")
        XCTAssertEqual(c.preVote(from: "A", lastSeq: 50, lastTerm: 1), [], "the candidate is no pre-voter")
        XCTAssertEqual(c.preVote(from: "B", lastSeq: 9, lastTerm: 1).count, 0, "2 of 4: a majority is 3")
        XCTAssertEqual(c.preVote(from: "C", lastSeq: 9, lastTerm: 1).count, 3)
        XCTAssertEqual(c.preVote(from: "M", lastSeq: 9, lastTerm: 1), [.sendPromise(to: "M")])
        XCTAssertEqual(c.preVote(from: "M", lastSeq: 9, lastTerm: 1), [], "asked once")
    }

    func testACandidateThatDoesNotVoteNeedsAMajorityOfTheOthers() {
        var c = candidacy(voters: ["M": "master", "A": "till-a", "B": "till-b", "C": "till-c"], isVoter: false)
        XCTAssertEqual(c.majority, 2, "M, B, C vote")
        _ = c.start()
        XCTAssertEqual(c.preVote(from: "B", lastSeq: 9, lastTerm: 1), [])
        XCTAssertEqual(c.preVote(from: "C", lastSeq: 9, lastTerm: 1).count, 3)
        _ = c.voteGranted(from: "B", lastSeq: 9, lastTerm: 1)
        let r = report(c.voteGranted(from: "C", lastSeq: 9, lastTerm: 1))
        XCTAssertEqual(r?.promised, ["till-b", "till-c"])
        XCTAssertEqual(r?.voters, ["master", "till-b", "till-c"])
    }

    func testAPreVoteLostBeforeTheMajorityIsForgotten() {
        var c = candidacy()
        _ = c.start()
        _ = c.preVote(from: "B", lastSeq: 9, lastTerm: 1)
        XCTAssertEqual(c.linkLost(from: "B"), [])
        XCTAssertEqual(c.preVote(from: "C", lastSeq: 9, lastTerm: 1), [], "B's pre-vote went with its link")
    }

    func testAVoterAloneIsItsOwnMajority() {
        var c = candidacy(voters: ["A": "till-a"])
        let actions = c.start()
        XCTAssertEqual(
            Array(actions.prefix(2)), [.armDeadline(afterMillis: 10_000), .persistOwnVote(TermVote(term: 3, nodeId: "A"))])
        guard case .becomeMaster(let r) = actions.last else { return XCTFail("\(actions)") }
        XCTAssertFalse(r.forced)
    }

    func testPositionsOrderByTermThenSeq() {
        XCTAssertLessThan(LogPosition(lastSeq: 100, lastTerm: 1), LogPosition(lastSeq: 5, lastTerm: 2))
        XCTAssertLessThan(LogPosition(lastSeq: 5, lastTerm: 2), LogPosition(lastSeq: 6, lastTerm: 2))
        XCTAssertEqual(TermVote(stored: "3 node-a"), TermVote(term: 3, nodeId: "node-a"))
        XCTAssertEqual(TermVote(term: 3, nodeId: "node-a").stored, "3 node-a")
        for bad in ["", "3", "3 ", "x node", "0 node", "3 a b", " 3 a"] {
            XCTAssertNil(TermVote(stored: bad), bad)
        }
    }
}
