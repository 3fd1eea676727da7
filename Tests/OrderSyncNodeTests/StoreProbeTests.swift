import EventLoopIO
import XCTest

@testable import OrderSyncNode

/// The failing store's recovery probe, event by event: one timer while the store fails, none
/// once a commit succeeds, a probe only when its timer fired, armed again after a failed probe.
final class StoreProbeTests: XCTestCase {
    private var loop: EventLoop!
    private var armed: [TimerHandle] = []

    override func setUpWithError() throws {
        loop = try EventLoop()
    }

    /// Arms a real (never run) timer and records it.
    private func arm() -> TimerHandle {
        let timer = loop.schedule(after: .seconds(3600)) {}
        armed.append(timer)
        return timer
    }

    func testFailuresArmOneTimerAndACommitCancelsIt() {
        var probe = StoreProbe()
        XCTAssertFalse(probe.fired(), "no probe while healthy")
        XCTAssertNil(probe.committed())
        probe.failed(arm: arm)
        probe.failed(arm: arm)
        XCTAssertEqual(armed.count, 1, "a streak of failures arms one timer: at most one probe per interval")
        XCTAssertEqual(probe.committed(), armed[0], "a commit that succeeds cancels the probe")
        XCTAssertFalse(probe.fired(), "a cancelled probe's timer firing late writes nothing")
        probe.failed(arm: arm)
        XCTAssertEqual(armed.count, 2, "a new failure arms again")
    }

    func testAFailedProbeIsArmedAgainAndASucceedingOneEndsIt() {
        var probe = StoreProbe()
        probe.failed(arm: arm)
        XCTAssertTrue(probe.fired())
        XCTAssertFalse(probe.fired(), "one probe at a time")
        probe.failed(arm: arm)
        XCTAssertNil(probe.committed(), "the probe's own outcome is noted while it runs; nothing to cancel")
        XCTAssertEqual(armed.count, 1, "no timer while the probe runs")
        probe.ended(stillFailing: true, arm: arm)
        XCTAssertEqual(armed.count, 2, "still failing: the next probe is due")
        XCTAssertTrue(probe.fired())
        probe.ended(stillFailing: false, arm: arm)
        XCTAssertEqual(armed.count, 2)
        XCTAssertFalse(probe.fired(), "healthy: no more probes")
    }

    func testStoppingCancelsTheTimerAndAProbeEndingAfterwardsArmsNothing() {
        var probe = StoreProbe()
        probe.failed(arm: arm)
        XCTAssertEqual(probe.stop(), armed[0])
        XCTAssertFalse(probe.fired())
        probe.failed(arm: arm)
        XCTAssertTrue(probe.fired())
        XCTAssertNil(probe.stop(), "a probe on its way has no timer")
        probe.ended(stillFailing: true, arm: arm)
        XCTAssertEqual(armed.count, 2, "closed: the probe is not armed again")
    }
}
