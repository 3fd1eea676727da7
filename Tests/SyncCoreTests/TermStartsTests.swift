import JSON
import XCTest

@testable import SyncCore

/// Divergence (`TermStarts.keep`) and the standby messages' codec.
final class TermStartsTests: XCTestCase {
    private let starts = TermStarts([1: 1, 2: 101])

    func testSameTermKeepsEverything() {
        XCTAssertEqual(TermStarts([1: 1]).keep(lastSeq: 80, lastTerm: 1, masterLastSeq: 100), 80)
        XCTAssertEqual(TermStarts().keep(lastSeq: 120, lastTerm: 1, masterLastSeq: 100), 120, "ahead in one term: no divergence")
    }

    func testTheOldMastersTailBeyondTheNewTermsStartIsDropped() {
        XCTAssertEqual(starts.keep(lastSeq: 105, lastTerm: 1, masterLastSeq: 130), 100)
        XCTAssertEqual(starts.keep(lastSeq: 105, lastTerm: 1, masterLastSeq: 101), 100)
        XCTAssertEqual(starts.keep(lastSeq: 101, lastTerm: 1, masterLastSeq: 100), 100, "beyond the master, of an ended term")
    }

    func testASlaveBehindKeepsEverything() {
        XCTAssertEqual(starts.keep(lastSeq: 50, lastTerm: 1, masterLastSeq: 130), 50)
        XCTAssertEqual(starts.keep(lastSeq: 100, lastTerm: 1, masterLastSeq: 130), 100)
        XCTAssertEqual(starts.keep(lastSeq: 110, lastTerm: 2, masterLastSeq: 130), 110)
        XCTAssertEqual(starts.keep(lastSeq: 0, lastTerm: 1, masterLastSeq: 130), 0)
    }

    func testATermThatLostIsDroppedFromItsStart() {
        // The slave followed a term 2 that never became this history; term 3 began at 101.
        XCTAssertEqual(TermStarts([1: 1, 3: 101]).keep(lastSeq: 103, lastTerm: 2, masterLastSeq: 110), 100)
        XCTAssertEqual(starts.term(ofSeq: 100), 1)
        XCTAssertEqual(starts.term(ofSeq: 101), 2)
        XCTAssertEqual(MasterTerms(term: 3, starts: starts).term(ofSeq: 0), 3)
    }

    func testTermStartsJSON() throws {
        XCTAssertEqual(JSONValue.object(starts.json).serialized(), #"{"1":1,"2":101}"#)
        let parsed = try XCTUnwrap(JSONParser.parse(#"{"1":1,"2":101,"x":3,"4":"y"}"#).objectValue)
        XCTAssertEqual(TermStarts(json: parsed), starts)
    }

    func testStandbyMessagesRoundTrip() throws {
        let members = StoreMembers(
            term: 2, master: StoreMember(id: "M", key: "k", name: "main"),
            terminals: [
                MemberTerminal(member: StoreMember(id: "T", key: "k2", name: "bar"), pairedMillis: 4, revokedMillis: 9, voter: false)
            ],
            settings: JSONObject([("storePOS", .bool(true))]))
        let messages: [StandbyMessage] = [
            .members(members), .diverged(keep: 7, term: 3),
            .refused(opId: "op", origin: "till", term: 2, errors: [WireError(.alreadyExists, "taken", uuid: "u")]),
        ]
        for m in messages {
            let o = try XCTUnwrap(JSONParser.parse(m.encodedBytes()).objectValue)
            XCTAssertEqual(try StandbyMessage.decode(o)?.get(), m)
        }
        XCTAssertNil(StandbyMessage.decode(JSONObject([("type", .string("ready"))])))
        let bad = try XCTUnwrap(JSONParser.parse(#"{"type":"diverged","keep":-1}"#).objectValue)
        XCTAssertThrowsError(try StandbyMessage.decode(bad)?.get())
    }

    func testHelloCarriesTerms() {
        var hello = HelloMessage(terminalId: "t", terminalName: "n", store: nil, lastSeq: 4, epoch: "e")
        hello.term = 3
        hello.lastTerm = 2
        guard case .success(.hello(let back)) = ClientMessage.decode(hello.encodedBytes()) else { return XCTFail("no hello") }
        XCTAssertEqual(back.term, 3)
        XCTAssertEqual(back.lastTerm, 2)
    }
}
