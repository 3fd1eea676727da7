import JSON
import XCTest

@testable import SyncCore

/// The last entry two journals share, by their term starts.
final class TermHistoryTests: XCTestCase {
    func h(_ starts: [Int64: Int64], _ lastSeq: Int64) -> TermHistory { TermHistory(starts: starts, lastSeq: lastSeq) }

    func testTermsOfEntries() {
        let a = h([1: 1, 2: 11, 4: 16], 20)
        XCTAssertEqual([1, 10, 11, 15, 16, 20].map { a.term(at: $0) }, [1, 1, 2, 2, 4, 4])
        XCTAssertNil(a.term(at: 21))
        XCTAssertEqual(a.lastTerm, 4)
        XCTAssertEqual(h([:], 0).lastTerm, 1)
        XCTAssertEqual(h([1: 1, 3: 11], 10).lastTerm, 1, "a master promoted at 10 has no entry of term 3 yet")
    }

    func testTheSharedPrefixEndsWhereTheTermsPart() {
        let master = h([1: 1, 2: 11], 30)
        XCTAssertEqual(master.sharedSeq(with: h([1: 1], 15)), 10, "the old master's term-1 tail after 10 is not in term 2's history")
        XCTAssertEqual(master.sharedSeq(with: h([1: 1], 8)), 8, "a slave behind shares all it has")
        XCTAssertEqual(master.sharedSeq(with: h([1: 1, 2: 11], 25)), 25)
        XCTAssertEqual(master.sharedSeq(with: h([1: 1, 2: 11], 40)), 30)
        XCTAssertEqual(master.sharedSeq(with: h([:], 0)), 0)
    }

    func testATermMissingFromTheOtherHistoryIsNotShared() {
        // Term 3's master was deposed before its entries reached the term-4 master; the slave
        // that followed it holds 11-15 of term 3 where the master holds 11-13 of term 2. The
        // rule "the seq before the first term after lastTerm" would keep them (K = 15).
        let master = h([1: 1, 2: 11, 4: 14], 20)
        let slave = h([1: 1, 3: 11], 15)
        XCTAssertEqual(master.sharedSeq(with: slave), 10)
        XCTAssertEqual(slave.sharedSeq(with: master), 10, "symmetric")
        XCTAssertEqual(h([1: 1, 2: 11], 20).sharedSeq(with: h([1: 1, 2: 14], 20)), 20, "log matching: a term's entries agree")
    }

    func testStartsAsJSON() {
        let a = h([2: 812, 1: 1], 900)
        XCTAssertEqual(a.startsJSON.serialized(), #"{"1":1,"2":812}"#)
        XCTAssertEqual(TermHistory.starts(json: a.startsJSON), [1: 1, 2: 812])
        for bad in [#"{"0":1}"#, #"{"1":0}"#, #"{"a":1}"#, #"{"1":"1"}"#, "[1]"] {
            XCTAssertNil(TermHistory.starts(json: try JSONParser.parse(bad)), bad)
        }
    }
}
