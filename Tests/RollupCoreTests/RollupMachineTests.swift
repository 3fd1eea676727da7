import RollupCore
import XCTest

/// The roll-up's state machine: the checkpoint read on every connect, batches, waiting,
/// jittered backoff, conflict and gap stops, `--once`.
final class RollupMachineTests: XCTestCase {
    func testFollowModeShipsThenWaitsAndWakes() {
        var m = RollupMachine(once: false)
        XCTAssertEqual(m.start(), .connect)
        XCTAssertEqual(m.connected(), .readCheckpoint)
        XCTAssertEqual(m.checkpointRead(seq: 5), .plan(checkpoint: 5))
        XCTAssertEqual(m.planned(.ship(first: 6, last: 900)), .ship(checkpoint: 5, first: 6, last: 900))
        XCTAssertEqual(m.phase, .shipping)
        XCTAssertEqual(m.committed(through: 505), .plan(checkpoint: 505))
        XCTAssertEqual(m.planned(.ship(first: 506, last: 900)), .ship(checkpoint: 505, first: 506, last: 900))
        XCTAssertEqual(m.committed(through: 900), .plan(checkpoint: 900))
        XCTAssertEqual(m.planned(.caughtUp), .wait(announce: true))
        XCTAssertEqual(m.phase, .idle)
        XCTAssertEqual(m.checkpoint, 900)
        XCTAssertEqual(m.woke(), .plan(checkpoint: 900))
        // Caught up again with nothing shipped in between: not announced twice.
        XCTAssertEqual(m.planned(.caughtUp), .wait(announce: false))
        XCTAssertEqual(m.woke(), .plan(checkpoint: 900))
        XCTAssertNil(RollupMachineTests.wokeWhileShipping())
    }

    static func wokeWhileShipping() -> RollupMachine.Action? {
        var m = RollupMachine(once: false)
        _ = m.connected()
        _ = m.checkpointRead(seq: 0)
        _ = m.planned(.ship(first: 1, last: 2))
        return m.woke()
    }

    func testOnceFinishesWhenCaughtUpAndGivesUpWhenUnreachable() {
        var m = RollupMachine(once: true)
        _ = m.connected()
        _ = m.checkpointRead(seq: 0)
        XCTAssertEqual(m.planned(.caughtUp), .finish)
        var n = RollupMachine(once: true)
        XCTAssertEqual(n.failed(unit: 0.5), .giveUp)
    }

    func testFailuresBackOffExponentiallyWithJitterAndReadTheCheckpointAgain() {
        var m = RollupMachine(once: false, backoff: RollupBackoff(base: 1, cap: 8))
        guard case .backoff(let d1, 1) = m.failed(unit: 0) else { return XCTFail("no backoff") }
        XCTAssertEqual(d1, 0.5)
        XCTAssertEqual(m.phase, .backoff)
        XCTAssertEqual(m.backoffElapsed(), .connect)
        guard case .backoff(let d2, 2) = m.failed(unit: 0.999) else { return XCTFail("no backoff") }
        XCTAssertEqual(d2, 2 * 0.9995, accuracy: 1e-9)
        _ = m.backoffElapsed()
        // A failure after connecting: the checkpoint is read again on the next connect.
        XCTAssertEqual(m.connected(), .readCheckpoint)
        _ = m.checkpointRead(seq: 3)
        _ = m.planned(.ship(first: 4, last: 9))
        guard case .backoff(_, 3) = m.failed(unit: 0) else { return XCTFail("attempts are counted until a batch commits") }
        XCTAssertEqual(m.backoffElapsed(), .connect)
        XCTAssertEqual(m.connected(), .readCheckpoint)
        XCTAssertEqual(m.checkpointRead(seq: 3), .plan(checkpoint: 3))
        _ = m.planned(.ship(first: 4, last: 9))
        _ = m.committed(through: 9)
        _ = m.planned(.ship(first: 10, last: 10))
        guard case .backoff(_, 1) = m.failed(unit: 0) else { return XCTFail("a committed batch resets the attempts") }
    }

    func testBackoffIsCappedAndJittered() {
        let b = RollupBackoff(base: 0.5, cap: 30)
        XCTAssertEqual(b.delay(attempt: 1, unit: 0), 0.25)
        XCTAssertEqual(b.delay(attempt: 1, unit: 1), 0.5)
        XCTAssertEqual(b.delay(attempt: 4, unit: 0), 2)
        XCTAssertEqual(b.delay(attempt: 40, unit: 1), 30)
        XCTAssertEqual(b.delay(attempt: 40, unit: 0), 15)
        XCTAssertNotEqual(b.delay(attempt: 3, unit: 0.1), b.delay(attempt: 3, unit: 0.9))
    }

    func testConflictStops() {
        var m = RollupMachine(once: false)
        _ = m.connected()
        _ = m.checkpointRead(seq: 0)
        _ = m.planned(.ship(first: 1, last: 3))
        XCTAssertEqual(m.conflict(seq: 2), .stop(.conflict(seq: 2)))
        XCTAssertEqual(m.phase, .conflict)
        XCTAssertNil(m.woke())
    }

    func testGapStops() {
        var m = RollupMachine(once: true)
        _ = m.connected()
        _ = m.checkpointRead(seq: 10)
        XCTAssertEqual(m.planned(.gap(first: 11, last: 49)), .stop(.gap(first: 11, last: 49)))
        XCTAssertEqual(m.phase, .gap)
    }

    func testAMovedCheckpointIsReadAgain() {
        var m = RollupMachine(once: false)
        _ = m.connected()
        _ = m.checkpointRead(seq: 0)
        _ = m.planned(.ship(first: 1, last: 3))
        XCTAssertEqual(m.checkpointMoved(), .readCheckpoint)
        XCTAssertEqual(m.checkpointRead(seq: 3), .plan(checkpoint: 3))
    }
}
