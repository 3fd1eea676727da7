import JSON
import SyncCore
import XCTest

/// `TermStarts.sharedSeq` and the hello's `termStarts` (`Docs/PROTOCOL.md` 7, "Divergence
/// across terms").
final class TermStartsSharedSeqTests: XCTestCase {
    private func shared(_ a: [Int64: Int64], _ aLast: Int64, _ b: [Int64: Int64], _ bLast: Int64) -> Int64 {
        TermStarts(a).sharedSeq(lastSeq: aLast, with: TermStarts(b), otherLastSeq: bLast)
    }

    func testThreeTermsShareOnlyTheTermBothHistoriesHold() {
        // The master (term 4 from 14) holds 11-13 of term 2; the slave of deposed term 3 holds
        // 11-15 of term 3: only 1-10 (term 1) is shared, on either side.
        XCTAssertEqual(shared([1: 1, 2: 11, 4: 14], 20, [1: 1, 3: 11], 15), 10)
        XCTAssertEqual(shared([1: 1, 3: 11], 15, [1: 1, 2: 11, 4: 14], 20), 10)
        // TermHistory answers the same through TermStarts.
        XCTAssertEqual(
            TermHistory(starts: [1: 1, 2: 11, 4: 14], lastSeq: 20).sharedSeq(with: TermHistory(starts: [1: 1, 3: 11], lastSeq: 15)), 10)
    }

    func testOneHistoryIsAPrefixOfTheOther() {
        XCTAssertEqual(shared([1: 1, 2: 11], 20, [1: 1, 2: 11], 12), 12, "a slave behind keeps all it holds")
        XCTAssertEqual(shared([1: 1, 2: 11], 12, [1: 1, 2: 11], 20), 12, "at most the shorter journal")
        XCTAssertEqual(shared([1: 1, 2: 11], 20, [1: 1, 2: 11, 3: 21], 20), 20, "a term started after both ends")
        XCTAssertEqual(shared([1: 1, 2: 11], 20, [:], 0), 0, "an empty journal shares nothing")
    }

    func testATermThatAppliedNothingHereSharesNothing() {
        // The term-1026 master was a slave at 47 of a term-4 master that started at 48: it kept
        // term 4's start from that master's `ready`, then was promoted at 47 itself. Its entries
        // from 48 on are term 1026's; the deposed term-4 master holds 48-52 of term 4, and those
        // are not shared.
        let master: [Int64: Int64] = [1: 1, 4: 48, 1026: 48]
        let deposed: [Int64: Int64] = [1: 1, 4: 48]
        XCTAssertEqual(shared(master, 55, deposed, 52), 47)
        XCTAssertEqual(shared(deposed, 52, master, 55), 47, "symmetric")
        XCTAssertEqual(TermStarts(master).term(ofSeq: 52), 1026, "term(ofSeq:) reads the same history")
        XCTAssertEqual(shared(master, 55, [1: 1, 4: 48, 1026: 48], 50), 50, "a slave of term 1026 shares all it has")
    }

    func testTermOneIsImpliedFromSeqOne() {
        // Starts that do not name term 1 (a store from before terms) still hold term 1 from seq 1.
        XCTAssertEqual(shared([:], 8, [1: 1, 2: 11], 20), 8)
        XCTAssertEqual(shared([:], 15, [1: 1, 2: 11], 20), 10, "11-15 are term 1 here and term 2 there")
        XCTAssertEqual(shared([2: 11], 15, [1: 1, 2: 11], 20), 15)
    }

    func testTheHelloCarriesTermStarts() throws {
        var hello = HelloMessage(terminalId: "t", terminalName: "till", store: "s", lastSeq: 15, epoch: "e")
        hello.termStarts = TermStarts([3: 11, 1: 1])
        let text = String(decoding: hello.encodedBytes(), as: UTF8.self)
        XCTAssertTrue(text.contains(#""termStarts":{"1":1,"3":11}"#), text)
        guard case .success(.hello(let read)) = ClientMessage.decode(hello.encodedBytes()) else { return XCTFail(text) }
        XCTAssertEqual(read.termStarts, TermStarts([1: 1, 3: 11]))
        hello.termStarts = nil
        guard case .success(.hello(let older)) = ClientMessage.decode(hello.encodedBytes()) else { return XCTFail() }
        XCTAssertNil(older.termStarts, "an older build's hello has none: the master falls back to TermStarts.keep")
    }

    func testABadTermStartsIsRefusedByName() {
        for bad in [#"{"0":1}"#, #"{"1":0}"#, #"{"a":1}"#, #"{"1":"1"}"#, "[1]", "null"] {
            let text = #"{"type":"hello","terminal":"t","lastSeq":3,"termStarts":"# + bad + "}"
            guard case .failure(let error) = ClientMessage.decode(text) else { return XCTFail(bad) }
            XCTAssertEqual(error.code, .invalidMessage, bad)
            XCTAssertTrue(error.message.contains("termStarts"), error.message)
        }
    }

    /// A promotion's starts (`TermStarts.beginning`): an earlier term that starts at or after
    /// the new term's first seq applied nothing here and goes; the others stay.
    func testAPromotionDropsAnEarlierTermThatAppliedNothingHere() {
        XCTAssertEqual(TermStarts([1: 1, 4: 48]).beginning(term: 1026, at: 48).starts, [1: 1, 1026: 48])
        XCTAssertEqual(TermStarts([1: 1, 4: 50]).beginning(term: 1026, at: 41).starts, [1: 1, 1026: 41], "a start beyond it")
        XCTAssertEqual(TermStarts([1: 1, 4: 47]).beginning(term: 1026, at: 48).starts, [1: 1, 4: 47, 1026: 48], "term 4 holds 47")
        XCTAssertEqual(TermStarts([:]).beginning(term: 2, at: 1).starts, [1: 1, 2: 1], "an empty journal")
        XCTAssertEqual(TermStarts([3: 11]).beginning(term: 5, at: 20).starts, [1: 1, 3: 11, 5: 20], "term 1 named")
        // What it shares with the deposed term-4 master is the same with or without the start.
        let pruned = TermStarts([1: 1, 4: 48]).beginning(term: 1026, at: 48)
        XCTAssertEqual(pruned.sharedSeq(lastSeq: 60, with: TermStarts([1: 1, 4: 48]), otherLastSeq: 52), 47)
        XCTAssertEqual(shared([1: 1, 4: 48, 1026: 48], 60, [1: 1, 4: 48], 52), 47)
    }
}
