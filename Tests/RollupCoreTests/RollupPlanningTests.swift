import JSON
import RollupCore
import XCTest

/// Batch limits, the range to ship (stable seq, gaps) and the orders a batch leaves behind.
final class RollupPlanningTests: XCTestCase {
    func entry(_ seq: Int64, size: Int = 10, op: Int = 0, message: String? = nil) -> RollupEntry {
        RollupEntry(
            seq: seq, term: 1, opId: nil, origin: "local", operation: op,
            message: message.map { Array($0.utf8) } ?? [UInt8](repeating: UInt8(ascii: "x"), count: size),
            recordedAtMillis: 1_700_000_000_000 + seq)
    }

    func testBatchStopsAt500Entries() {
        let limits = RollupBatchLimits()
        XCTAssertEqual(limits.count(sizes: Array(repeating: 100, count: 1200)), 500)
        XCTAssertEqual(limits.count(sizes: Array(repeating: 100, count: 499)), 499)
        XCTAssertEqual(limits.count(sizes: []), 0)
    }

    func testBatchStopsAtOneMebibyte() {
        let limits = RollupBatchLimits()
        // 300 KiB each: three fit (900 KiB), the fourth would pass 1 MiB.
        XCTAssertEqual(limits.count(sizes: Array(repeating: 300 << 10, count: 10)), 3)
        // Exactly 1 MiB fits.
        XCTAssertEqual(limits.count(sizes: [512 << 10, 512 << 10, 1]), 2)
    }

    func testAnEntryLargerThanTheLimitShipsAlone() {
        let limits = RollupBatchLimits()
        XCTAssertEqual(limits.count(sizes: [3 << 20, 10, 10]), 1)
        XCTAssertEqual(limits.count(sizes: [10, 3 << 20]), 1)
    }

    func testBatchChainsFromTheCheckpoint() throws {
        let start = RollupHash.start(storeId: "s", lineage: "l")
        let all = (1...4).map { entry($0) }
        let whole = try XCTUnwrap(RollupBatch(entries: all, after: 0, rolling: start))
        let first = try XCTUnwrap(RollupBatch(entries: Array(all[0..<2]), after: 0, rolling: start))
        let second = try XCTUnwrap(RollupBatch(entries: Array(all[2...]), after: 2, rolling: first.lastRolling))
        // Two batches chain to the same rolling hash as one.
        XCTAssertEqual(second.lastRolling, whole.lastRolling)
        XCTAssertEqual(whole.firstSeq, 1)
        XCTAssertEqual(whole.lastSeq, 4)
        XCTAssertEqual(whole.rows[1].rolling, RollupHash.rolling(previous: whole.rows[0].rolling, hash: whole.rows[1].hash))
    }

    func testBatchRefusesAHole() {
        let start = RollupHash.start(storeId: "s", lineage: "l")
        XCTAssertNil(RollupBatch(entries: [entry(1), entry(3)], after: 0, rolling: start))
        XCTAssertNil(RollupBatch(entries: [entry(2)], after: 0, rolling: start))
    }

    func testRangeShipsOnlyUpToTheStableSeq() {
        XCTAssertEqual(RollupRange.decide(checkpoint: 0, oldest: 1, newest: 10, stable: 7), .ship(first: 1, last: 7))
        XCTAssertEqual(RollupRange.decide(checkpoint: 7, oldest: 1, newest: 10, stable: 7), .caughtUp)
        XCTAssertEqual(RollupRange.decide(checkpoint: 10, oldest: 1, newest: 10, stable: 10), .caughtUp)
        // Head office ahead of this copy (a standby behind): nothing to do, never a gap.
        XCTAssertEqual(RollupRange.decide(checkpoint: 12, oldest: 1, newest: 10, stable: 10), .caughtUp)
    }

    func testRangeReportsAGapInsteadOfSkipping() {
        // Compacted: the journal keeps 50...100, head office has 10.
        XCTAssertEqual(RollupRange.decide(checkpoint: 10, oldest: 50, newest: 100, stable: 100), .gap(first: 11, last: 49))
        // A standby's copy after a snapshot at 40: the journal is empty, its floor 40.
        XCTAssertEqual(RollupRange.decide(checkpoint: 0, oldest: nil, newest: 40, stable: 40), .gap(first: 1, last: 40))
        // The same copy before it heard a stable seq (0): the gap, not "caught up".
        XCTAssertEqual(RollupRange.decide(checkpoint: 0, oldest: nil, newest: 40, stable: 0), .gap(first: 1, last: 40))
        XCTAssertEqual(RollupRange.decide(checkpoint: 10, oldest: 50, newest: 100, stable: 5), .gap(first: 11, last: 49))
        // Head office at or past the snapshot's base: nothing missing.
        XCTAssertEqual(RollupRange.decide(checkpoint: 40, oldest: nil, newest: 40, stable: 0), .caughtUp)
        XCTAssertEqual(RollupRange.decide(checkpoint: 40, oldest: 41, newest: 45, stable: 0), .caughtUp)
        // Right at the edge: the checkpoint is the entry before the oldest kept.
        XCTAssertEqual(RollupRange.decide(checkpoint: 49, oldest: 50, newest: 100, stable: 100), .ship(first: 50, last: 100))
    }

    func testOrderRowsKeepEachOrdersLastState() {
        let u = "9437C8F5-D742-46CB-9847-737C5809392C"
        let entries = [
            entry(1, message: #"{"operation":0,"orders":[{"uuid":"\#(u)","customerName":"A","version":1}],"seq":1}"#),
            entry(2, op: 1, message: #"{"operation":1,"orders":[{"uuid":"\#(u.lowercased())","customerName":"B","version":2}],"seq":2}"#),
            entry(3, message: #"{"operation":0,"orders":[{"uuid":"11111111-2222-3333-4444-555555555555","version":1}],"seq":3}"#),
            entry(4, op: 2, message: #"{"operation":2,"orders":[{"uuid":"11111111-2222-3333-4444-555555555555"}],"seq":4}"#),
            entry(5, message: "not json"),
        ]
        let rows = OrderRow.collapse(entries)
        XCTAssertEqual(rows.map(\.uuid), [u.lowercased(), "11111111-2222-3333-4444-555555555555"])
        XCTAssertEqual(rows[0].text("customerName"), "B")
        XCTAssertEqual(rows[0].version, 2)
        XCTAssertEqual(rows[0].seq, 2)
        XCTAssertFalse(rows[0].removed)
        XCTAssertTrue(rows[1].removed)
        XCTAssertEqual(rows[1].seq, 4)
    }
}
