import JSON
import XCTest

@testable import SyncCore

/// Terms as ballots owned by one member (Docs/PROTOCOL.md 7.16): no two members ever bid the same
/// term, and a forced candidate withdraws when a voter names a rival holding a term as high.
final class TermBallotTests: XCTestCase {
    func testABidIsTheSmallestTermAboveEveryKnownTermThatTheMemberOwns() {
        let k = TermBallot.modulus
        XCTAssertEqual(TermBallot.bid(number: 1, above: 1), k + 1, "term 1 is the store's first; 1 owns k+1")
        XCTAssertEqual(TermBallot.bid(number: 2, above: 1), 2, "an old store at term 1: member 2 owns term 2")
        XCTAssertEqual(TermBallot.bid(number: 5, above: 3), 5, "terms of the +1 rule below k stay valid")
        XCTAssertEqual(TermBallot.bid(number: 5, above: 5), k + 5)
        XCTAssertEqual(TermBallot.bid(number: 5, above: 3 * k + 5), 4 * k + 5)
        XCTAssertEqual(TermBallot.bid(number: 1023, above: 2 * k), 2 * k + 1023)
        XCTAssertEqual(TermBallot.owner(of: 3 * k + 7), 7)
        XCTAssertNil(TermBallot.owner(of: 3), "a term of the +1 rule names no owner")
        XCTAssertEqual(TermBallot.nextNumber(after: 0), 1)
        XCTAssertEqual(TermBallot.nextNumber(after: 1022), 1023)
        XCTAssertNil(TermBallot.nextNumber(after: 1023), "every number is taken")
    }

    func testTwoMembersNeverBidTheSameTermWhateverTheyKnow() {
        // Every pair among a spread of numbers, over thousands of known terms (each side knowing
        // a different term, as two cut-off tills would): bids differ, and each bid is above what
        // its bidder knew, owned by it, and the smallest such term.
        let knowns: [Int64] = Array(1...3_000) + [4_095, 4_096, 4_097, 1_000_000, 1_000_001]
        let numbers: [Int64] = [1, 2, 3, 7, 64, 511, 512, 1000, 1022, 1023]
        var pairs = 0
        for (i, knownA) in knowns.enumerated() {
            let knownB = knowns[(i * 7_919) % knowns.count]
            for a in numbers {
                let bidA = TermBallot.bid(number: a, above: knownA)
                if bidA <= knownA || bidA - knownA > TermBallot.modulus || bidA % TermBallot.modulus != a {
                    XCTFail("member \(a) knowing \(knownA) bid \(bidA)")
                }
                for b in numbers where a != b {
                    let bidB = TermBallot.bid(number: b, above: knownB)
                    if bidA == bidB { XCTFail("members \(a) and \(b) knowing \(knownA) and \(knownB) both bid \(bidA)") }
                    pairs += 1
                }
            }
        }
        XCTAssertEqual(pairs, knowns.count * 90)
        // The same member bidding again (a second promote) always moves up.
        var known: Int64 = 1
        for _ in 0..<50 {
            let next = TermBallot.bid(number: 9, above: known)
            XCTAssertGreaterThan(next, known)
            known = next
        }
    }

    func testAVoteNamesItsRivalOnTheWire() {
        let vote = ElectionMessage.vote(
            .init(
                term: 1029, granted: false, position: LogPosition(lastSeq: 4, lastTerm: 1), reason: "voted for B in term 2050",
                rival: TermVote(term: 2050, nodeId: "B")))
        let text =
            #"{"type":"vote","term":1029,"granted":false,"lastSeq":4,"lastTerm":1,"reason":"voted for B in term 2050","rival":"B","rivalTerm":2050}"#
        XCTAssertEqual(String(decoding: vote.encodedBytes(), as: UTF8.self), text)
        XCTAssertEqual(ElectionMessage.decode(Array(text.utf8)), .success(vote))
        let noTerm = #"{"type":"vote","term":1029,"granted":false,"lastSeq":4,"lastTerm":1,"rival":"B"}"#
        guard case .failure(let e)? = ElectionMessage.decode(Array(noTerm.utf8)) else { return XCTFail("a rival needs its term") }
        XCTAssertTrue(e.message.contains("rivalTerm"), e.message)
    }

    func testAVoterNamesTheHolderOfATermAsHighAsTheOneAsked() {
        let members = ["M": "aa", "A": "bb", "B": "cc", "S": "dd"]
        let promised = FollowPolicy(
            nodeId: "S", term: 2050, vote: TermVote(term: 2050, nodeId: "B"), members: members, followedMaster: nil)
        XCTAssertEqual(promised.rival(against: 1029, from: "A"), TermVote(term: 2050, nodeId: "B"), "a higher term promised")
        XCTAssertEqual(promised.rival(against: 2050, from: "A"), TermVote(term: 2050, nodeId: "B"), "the same term promised")
        XCTAssertNil(promised.rival(against: 2050, from: "B"), "its own candidate is granted")
        XCTAssertNil(promised.rival(against: 3073, from: "A"), "a higher bid is granted")
        let following = FollowPolicy(nodeId: "S", term: 1026, vote: nil, members: members, followedMaster: "M")
        XCTAssertEqual(following.rival(against: 5, from: "A"), TermVote(term: 1026, nodeId: "M"), "the master it follows")
        let unknown = FollowPolicy(nodeId: "S", term: 1026, vote: TermVote(term: 3, nodeId: "B"), members: members, followedMaster: nil)
        XCTAssertNil(unknown.rival(against: 5, from: "A"), "no holder known: a plain refusal")
    }

    /// Candidate A (forced) in term 1025; voters M, A, B, C, D.
    private func forced(force: Bool = true) -> Candidacy {
        Candidacy(
            .init(
                term: 1025, nodeId: "A", name: "till-a", position: LogPosition(lastSeq: 10, lastTerm: 1), isVoter: true,
                voters: ["M": "master", "A": "till-a", "B": "till-b", "C": "till-c", "D": "till-d"], force: force))
    }

    func testAForcedCandidateToldOfARivalAsHighWithdrawsNamingIt() {
        var c = forced()
        _ = c.start()
        _ = c.preVote(from: "B", lastSeq: 10, lastTerm: 1)
        _ = c.preVote(from: "C", lastSeq: 10, lastTerm: 1)
        XCTAssertTrue(c.hasVoted, "three of five pre-voted: promises asked")
        XCTAssertEqual(c.voteGranted(from: "B", lastSeq: 10, lastTerm: 1), [])
        let actions = c.voteRefused(from: "C", reason: "voted for D in term 2052", rival: TermVote(term: 2052, nodeId: "D"))
        guard actions.count == 1, case .withdraw(let r) = actions[0] else { return XCTFail("\(actions)") }
        XCTAssertEqual(r.refusal?.code, .rivalCandidate)
        XCTAssertEqual(r.refusal?.code.rawValue, "rival_candidate")
        XCTAssertTrue(r.refusal?.message.contains("till-d holds term 2052") == true, r.refusal?.message ?? "")
        XCTAssertTrue(r.refusal?.message.contains("till-c answered") == true, r.refusal?.message ?? "")
        XCTAssertEqual(r.term, 1025)
        XCTAssertEqual(r.refused, [.init(name: "till-c", reason: "voted for D in term 2052")])
        XCTAssertEqual(c.deadlinePassed(), [], "withdrawn: the deadline changes nothing")
    }

    func testAForcedCandidateGoesOnPastARefusalWithoutARivalAsHigh() {
        var c = forced()
        _ = c.start()
        _ = c.preVote(from: "B", lastSeq: 10, lastTerm: 1)
        let actions = c.deadlinePassed()
        XCTAssertEqual(actions.first, .forced(unreachable: ["master", "till-c", "till-d"]))
        let done = c.voteRefused(from: "B", reason: "term 1025 is below", rival: TermVote(term: 1000, nodeId: "D"))
        guard done.count == 1, case .becomeMaster(let r) = done[0] else { return XCTFail("\(done)") }
        XCTAssertTrue(r.forced)
        XCTAssertNil(r.refusal)
    }

    func testACandidateNotForcedCountsARivalAsARefusal() {
        var c = forced(force: false)
        _ = c.start()
        _ = c.preVote(from: "B", lastSeq: 10, lastTerm: 1)
        _ = c.preVote(from: "C", lastSeq: 10, lastTerm: 1)
        XCTAssertEqual(c.voteRefused(from: "C", reason: "voted for D", rival: TermVote(term: 2052, nodeId: "D")), [])
        let actions = c.voteGranted(from: "B", lastSeq: 10, lastTerm: 1)
        guard actions.count == 1, case .withdraw(let r) = actions[0] else { return XCTFail("\(actions)") }
        XCTAssertEqual(r.refusal?.code, .noMajority, "two of five: no majority, as before")
    }
}
