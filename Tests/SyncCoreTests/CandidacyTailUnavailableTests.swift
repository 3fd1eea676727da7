import JSON
import XCTest

@testable import SyncCore

/// A voter ahead that cannot give a gapless tail (`ElectionMessage.tailUnavailable`): the
/// candidate tries the next voter ahead, and refuses `tail_unavailable` when none can.
final class CandidacyTailUnavailableTests: XCTestCase {
    let voters = ["M": "master", "A": "till-a", "B": "till-b", "C": "till-c", "D": "till-d"]

    func ballot() -> Candidacy {
        var c = Candidacy(
            .init(
                term: 3, nodeId: "A", name: "till-a", position: LogPosition(lastSeq: 10, lastTerm: 1), isVoter: true, voters: voters,
                force: false))
        _ = c.start()
        _ = c.preVote(from: "B", lastSeq: 11, lastTerm: 1)
        _ = c.preVote(from: "C", lastSeq: 12, lastTerm: 1)
        _ = c.voteGranted(from: "B", lastSeq: 11, lastTerm: 1)
        XCTAssertEqual(c.voteGranted(from: "C", lastSeq: 12, lastTerm: 1).first, .fetch(from: "C", after: 10))
        return c
    }

    func testUnavailableTriesTheNextVoterAheadThenRefusesTailUnavailable() {
        var c = ballot()
        XCTAssertEqual(c.tailUnavailable().first, .fetch(from: "B", after: 10), "C cannot; B is ahead too")
        let done = c.tailUnavailable()
        guard case .withdraw(let r) = done.first else { return XCTFail("\(done)") }
        XCTAssertEqual(r.refusal?.code, .tailUnavailable)
        XCTAssertEqual(r.refusal?.code.rawValue, "tail_unavailable")
        XCTAssertTrue(r.refusal?.message.contains("till-b") ?? false, r.refusal?.message ?? "")
        XCTAssertFalse(r.promoted)
    }

    func testOneFailedLinkAmongThemStaysFetchFailed() {
        var c = ballot()
        _ = c.tailUnavailable()
        guard case .withdraw(let r) = c.fetchFailed().first else { return XCTFail() }
        XCTAssertEqual(r.refusal?.code, .fetchFailed)
    }

    func testTheNextVoterCanStillGiveTheTail() {
        var c = Candidacy(
            .init(
                term: 3, nodeId: "A", name: "till-a", position: LogPosition(lastSeq: 10, lastTerm: 1), isVoter: true, voters: voters,
                force: false))
        _ = c.start()
        _ = c.preVote(from: "B", lastSeq: 12, lastTerm: 1)
        _ = c.preVote(from: "C", lastSeq: 12, lastTerm: 1)
        _ = c.voteGranted(from: "B", lastSeq: 12, lastTerm: 1)
        XCTAssertEqual(c.voteGranted(from: "C", lastSeq: 12, lastTerm: 1).first, .fetch(from: "B", after: 10))
        XCTAssertEqual(c.tailUnavailable().first, .fetch(from: "C", after: 10))
        let done = c.fetched(upTo: 12)
        guard case .becomeMaster(let r) = done.first else { return XCTFail("\(done)") }
        XCTAssertEqual(r.fetched, .init(from: "till-c", entries: 2))
    }

    func testForcedGoesOnWithoutTheTail() {
        var c = Candidacy(
            .init(
                term: 3, nodeId: "A", name: "till-a", position: LogPosition(lastSeq: 10, lastTerm: 1), isVoter: true, voters: voters,
                force: true))
        _ = c.start()
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
