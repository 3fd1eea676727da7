import JSON
import XCTest

@testable import SyncCore

/// A voter ahead that cannot give a gapless tail (`ElectionMessage.tailUnavailable`): the
/// candidate tries the next voter ahead, and refuses `tail_unavailable` when none can.
final class CandidacyTailUnavailableTests: XCTestCase {
    let voters = ["M": "master", "A": "till-a", "B": "till-b", "C": "till-c", "D": "till-d"]

    /// A started candidate at 10 of five voters.
    func candidate(force: Bool = false) -> Candidacy {
        var c = Candidacy(
            .init(
                term: 3, nodeId: "A", name: "till-a", position: LogPosition(lastSeq: 10, lastTerm: 1), isVoter: true, voters: voters,
                force: force))
        _ = c.start()
        return c
    }

    /// A candidate at 10 with the promises of B (at `b`) and C (at `c`); the action that asked
    /// for the first fetch comes with it.
    func ballot(b: Int64 = 11, c cSeq: Int64 = 12) -> (Candidacy, Candidacy.Action?) {
        var c = candidate()
        _ = c.preVote(from: "B", lastSeq: b, lastTerm: 1)
        _ = c.preVote(from: "C", lastSeq: cSeq, lastTerm: 1)
        _ = c.voteGranted(from: "B", lastSeq: b, lastTerm: 1)
        let first = c.voteGranted(from: "C", lastSeq: cSeq, lastTerm: 1).first
        return (c, first)
    }

    func testUnavailableTriesTheNextVoterAheadThenRefusesTailUnavailable() {
        let made = ballot()
        var c = made.0
        XCTAssertEqual(made.1, .fetch(from: "C", after: 10))
        XCTAssertEqual(c.tailUnavailable().first, .fetch(from: "B", after: 10), "C cannot; B is ahead too")
        let done = c.tailUnavailable()
        guard case .withdraw(let r) = done.first else { return XCTFail("\(done)") }
        XCTAssertEqual(r.refusal?.code, .tailUnavailable)
        XCTAssertEqual(r.refusal?.code.rawValue, "tail_unavailable")
        XCTAssertTrue(r.refusal?.message.contains("till-b") ?? false, r.refusal?.message ?? "")
        XCTAssertFalse(r.promoted)
    }

    func testOneFailedLinkAmongThemStaysFetchFailed() {
        var c = ballot().0
        _ = c.tailUnavailable()
        guard case .withdraw(let r) = c.fetchFailed().first else { return XCTFail() }
        XCTAssertEqual(r.refusal?.code, .fetchFailed)
    }

    func testTheNextVoterCanStillGiveTheTail() {
        let made = ballot(b: 12, c: 12)
        var c = made.0
        XCTAssertEqual(made.1, .fetch(from: "B", after: 10), "of equals, the lowest id")
        XCTAssertEqual(c.tailUnavailable().first, .fetch(from: "C", after: 10))
        let done = c.fetched(upTo: 12)
        guard case .becomeMaster(let r) = done.first else { return XCTFail("\(done)") }
        XCTAssertEqual(r.fetched, .init(from: "till-c", entries: 2))
    }

    func testForcedGoesOnWithoutTheTail() {
        var c = candidate(force: true)
        _ = c.preVote(from: "B", lastSeq: 13, lastTerm: 1)
        _ = c.deadlinePassed()
        XCTAssertEqual(c.voteGranted(from: "B", lastSeq: 13, lastTerm: 1).first, .fetch(from: "B", after: 10))
        let done = c.tailUnavailable()
        guard case .becomeMaster(let r) = done.first else { return XCTFail("\(done)") }
        XCTAssertTrue(r.forced)
        XCTAssertNil(r.refusal)
    }

    func testTheAnswerIsAFetchedThatSaysSo() throws {
        let bytes = ElectionMessage.tailUnavailable(shared: 7)
        XCTAssertEqual(ElectionMessage.decode(bytes), .success(.fetched(seq: 7)), "an older candidate reads a plain fetched")
        XCTAssertTrue(ElectionMessage.isTailUnavailable(bytes))
        XCTAssertFalse(ElectionMessage.isTailUnavailable(ElectionMessage.fetched(seq: 7).encodedBytes()))
        XCTAssertFalse(ElectionMessage.isTailUnavailable(Array(#"{"type":"vote","unavailable":true}"#.utf8)))
    }
}
