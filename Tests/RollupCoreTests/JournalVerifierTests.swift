import RollupCore
import XCTest

/// verify's walk: equal journals, a tampered row, a broken chain, a gap, a row beyond the
/// checkpoint, a difference from the local journal.
final class JournalVerifierTests: XCTestCase {
    let start = RollupHash.start(storeId: "shop1", lineage: "L")

    func entries(_ n: Int64) -> [RollupEntry] {
        (1...n).map {
            RollupEntry(
                seq: $0, term: 1, opId: "op-\($0)", origin: "local", operation: 0,
                message: Array(#"{"operation":0,"orders":[],"seq":\#($0)}"#.utf8), recordedAtMillis: 1_700_000_000_000 + $0)
        }
    }

    /// Head office's rows as a correct roll-up writes them.
    func rows(_ entries: [RollupEntry]) -> [JournalVerifier.HeadRow] {
        RollupBatch(entries: entries, after: 0, rolling: start)!.rows.map {
            JournalVerifier.HeadRow(seq: $0.entry.seq, contentHash: $0.hash, storedHash: $0.hash, storedRolling: $0.rolling)
        }
    }

    func walk(_ rows: [JournalVerifier.HeadRow], local: [RollupEntry], checkpoint: Int64, rolling: [UInt8]?, above: Int64? = nil)
        -> JournalVerifier.Verdict
    {
        var v = JournalVerifier(start: start)
        let hashes = Dictionary(uniqueKeysWithValues: local.map { ($0.seq, RollupHash.entry($0)) })
        for r in rows { v.check(r, localHash: hashes[r.seq]) }
        return v.verdict(checkpointSeq: checkpoint, checkpointRolling: rolling, rowAboveCheckpoint: above)
    }

    func testEqualJournals() {
        let e = entries(5)
        let r = rows(e)
        XCTAssertEqual(walk(r, local: e, checkpoint: 5, rolling: r[4].storedRolling), .equal(seq: 5, rolling: r[4].storedRolling))
        // A compacted local journal (only 4...5 kept) still verifies.
        XCTAssertEqual(
            walk(r, local: Array(e[3...]), checkpoint: 5, rolling: r[4].storedRolling), .equal(seq: 5, rolling: r[4].storedRolling))
        // Nothing shipped yet.
        XCTAssertEqual(walk([], local: e, checkpoint: 0, rolling: nil), .equal(seq: 0, rolling: start))
    }

    func testTamperedContentNamesItsSeq() {
        let e = entries(5)
        var r = rows(e)
        var changed = e[2]
        changed.message = Array(#"{"operation":0,"orders":[],"seq":99}"#.utf8)
        r[2].contentHash = RollupHash.entry(changed)
        guard case .different(3, _) = walk(r, local: e, checkpoint: 5, rolling: r[4].storedRolling) else {
            return XCTFail("a changed message is found at its seq")
        }
    }

    func testRowRehashedButChainBrokenIsFound() {
        let e = entries(5)
        var r = rows(e)
        var changed = e[1]
        changed.message = Array(#"{"operation":0,"orders":[],"seq":2,"forged":true}"#.utf8)
        let h = RollupHash.entry(changed)
        r[1].contentHash = h
        r[1].storedHash = h
        guard case .different(2, let reason) = walk(r, local: [], checkpoint: 5, rolling: r[4].storedRolling) else {
            return XCTFail("a rehashed row breaks the rolling chain")
        }
        XCTAssertTrue(reason.contains("rolling"), reason)
    }

    func testDifferenceFromTheLocalJournal() {
        let e = entries(5)
        var local = e
        local[3].term = 2
        let r = rows(e)
        guard case .different(4, let reason) = walk(r, local: local, checkpoint: 5, rolling: r[4].storedRolling) else {
            return XCTFail("head office's entry differs from the local one")
        }
        XCTAssertTrue(reason.contains("local"), reason)
    }

    func testGapAndExtraRows() {
        let e = entries(5)
        let r = rows(e)
        var holed = r
        holed.remove(at: 2)
        guard case .different(3, _) = walk(holed, local: e, checkpoint: 5, rolling: r[4].storedRolling) else {
            return XCTFail("a missing row is a gap at its seq")
        }
        guard case .different(6, _) = walk(r, local: e, checkpoint: 5, rolling: r[4].storedRolling, above: 6) else {
            return XCTFail("a row beyond the checkpoint is named")
        }
        guard case .different(5, _) = walk(Array(r[0..<4]), local: e, checkpoint: 5, rolling: r[4].storedRolling) else {
            return XCTFail("rows ending before the checkpoint")
        }
        guard case .different(5, _) = walk(r, local: e, checkpoint: 5, rolling: r[3].storedRolling) else {
            return XCTFail("a checkpoint whose rolling hash is not its rows'")
        }
    }
}
