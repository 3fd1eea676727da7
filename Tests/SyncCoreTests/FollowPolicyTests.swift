import XCTest

@testable import SyncCore

/// A slave's decisions on announced instances and on promises (design.md, "Following",
/// "Promotion" step 4).
final class FollowPolicyTests: XCTestCase {
    let members = ["M": "aa", "A": "bb", "B": "cc", "S": "dd"]

    /// Slave S in term 2, following master M, no vote.
    func policy(term: Int64 = 2, vote: TermVote? = nil, followed: String? = "M") -> FollowPolicy {
        FollowPolicy(nodeId: "S", term: term, vote: vote, members: members, followedMaster: followed)
    }

    func testARogueWithAHighTermIsIgnoredAndOneWithoutIdIsLeftToTheTrustRules() {
        XCTAssertEqual(
            policy().decide(.init(id: "X", term: 999, role: .master)), .ignore(.notAMember(id: "X", term: 999)))
        XCTAssertEqual(policy().decide(.init(id: "X", term: 999, role: .candidate)), .ignore(.notAMember(id: "X", term: 999)))
        XCTAssertEqual(policy().decide(.init(id: nil, term: 999)), .ignore(.unidentified))
        XCTAssertEqual(policy().decide(.init(id: "S", term: 5)), .ignore(.ownInstance))
        XCTAssertEqual(
            FollowPolicy.IgnoreReason.notAMember(id: "X", term: 999).description, "X (term 999) is not a member of this store")
    }

    func testAHigherTermCandidateIsAPreVoteAndAHigherTermMasterIsFollowedAfterPersistingTheTerm() {
        XCTAssertEqual(policy().decide(.init(id: "A", term: 3, role: .candidate)), .preVote)
        XCTAssertEqual(policy().decide(.init(id: "A", term: 3, role: .master)), .follow(persistTerm: 3))
        XCTAssertEqual(
            policy().decide(.init(id: "A", term: 7, role: .init(txt: nil))), .follow(persistTerm: 7), "no role: a master")
        XCTAssertEqual(FollowPolicy.AnnouncedRole(txt: "candidate"), .candidate)
        XCTAssertEqual(FollowPolicy.AnnouncedRole(txt: "observer"), .master)
    }

    func testALowerTermIsIgnored() {
        XCTAssertEqual(policy().decide(.init(id: "M", term: 1)), .ignore(.lowerTerm(announced: 1, own: 2)))
        XCTAssertEqual(policy().decide(.init(id: "A", term: 1, role: .candidate)), .ignore(.lowerTerm(announced: 1, own: 2)))
    }

    func testInItsOwnTermASlaveFollowsOnlyTheNodeItStandsBy() {
        XCTAssertEqual(policy().decide(.init(id: "M", term: 2)), .follow(persistTerm: nil), "its master")
        XCTAssertEqual(policy().decide(.init(id: "A", term: 2)), .ignore(.termTaken(term: 2, by: "M")))
        XCTAssertEqual(policy().decide(.init(id: "A", term: 2, role: .candidate)), .ignore(.termTaken(term: 2, by: "M")))
        let voted = policy(term: 3, vote: TermVote(term: 3, nodeId: "A"))
        XCTAssertEqual(voted.decide(.init(id: "A", term: 3, role: .candidate)), .preVote, "back to the candidate it promised")
        XCTAssertEqual(voted.decide(.init(id: "A", term: 3, role: .master)), .follow(persistTerm: nil), "it won")
        XCTAssertEqual(voted.decide(.init(id: "M", term: 3)), .ignore(.termTaken(term: 3, by: "A")))
        XCTAssertEqual(voted.decide(.init(id: "B", term: 3, role: .candidate)), .ignore(.termTaken(term: 3, by: "A")))
        let fresh = policy(term: 1, followed: nil)
        XCTAssertEqual(fresh.decide(.init(id: "M", term: 1)), .follow(persistTerm: nil), "a new slave finds its master")
        XCTAssertEqual(fresh.decide(.init(id: "A", term: 1, role: .candidate)), .ignore(.termTaken(term: 1, by: nil)))
        let oldVote = policy(term: 3, vote: TermVote(term: 2, nodeId: "B"), followed: "A")
        XCTAssertEqual(oldVote.decide(.init(id: "A", term: 3)), .follow(persistTerm: nil), "a vote of an older term does not count")
    }

    func testAPromiseIsGrantedForAHigherTermAndPersistedFirst() {
        XCTAssertEqual(policy().grant(promise: 3, from: "A"), .granted(persist: TermVote(term: 3, nodeId: "A")))
        XCTAssertEqual(
            policy(term: 3, vote: TermVote(term: 3, nodeId: "A")).grant(promise: 3, from: "A"), .granted(persist: nil),
            "the same promise again: stored already")
    }

    func testTwoCandidatesInOneTermGetOnePromise() {
        var p = policy()
        guard case .granted(let vote?) = p.grant(promise: 3, from: "A") else { return XCTFail("A asked first") }
        p.term = vote.term
        p.vote = vote
        XCTAssertEqual(p.grant(promise: 3, from: "B"), .refused(reason: "voted for A in term 3"))
        XCTAssertEqual(p.grant(promise: 3, from: "A"), .granted(persist: nil))
        XCTAssertEqual(p.decide(.init(id: "B", term: 3, role: .candidate)), .ignore(.termTaken(term: 3, by: "A")))
        XCTAssertEqual(p.grant(promise: 4, from: "B"), .granted(persist: TermVote(term: 4, nodeId: "B")), "a later term may")
    }

    func testPromisesOfALowerOrTakenTermOrFromAStrangerAreRefused() {
        XCTAssertEqual(policy().grant(promise: 1, from: "A"), .refused(reason: "term 1 is below this terminal's term 2"))
        XCTAssertEqual(policy().grant(promise: 2, from: "A"), .refused(reason: "term 2 belongs to M"))
        XCTAssertEqual(policy().grant(promise: 999, from: "X"), .refused(reason: "X is not a member of this store"))
        XCTAssertEqual(policy().grant(promise: 3, from: "S"), .refused(reason: "a node does not promise itself over a link"))
    }
}
