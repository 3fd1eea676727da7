import EventLoopIO
import XCTest

@testable import OrderSyncNode

/// When the master withdraws and announces its service again after StorePOS links were lost.
final class StorePOSReannounceTests: XCTestCase {
    private let interval: Duration = .seconds(10)

    func testTheFirstLossWithdrawsAtOnceAndLaterLossesShareTheOneUnderWay() {
        var r = StorePOSReannounce()
        let t0 = MonotonicInstant.now
        XCTAssertEqual(r.linkLost(now: t0, interval: interval), .zero)
        XCTAssertEqual(r.phase, .due)
        XCTAssertNil(r.linkLost(now: t0 + .milliseconds(5), interval: interval), "one re-announcement serves both")
        XCTAssertEqual(r.withdrew(), 2)
        XCTAssertEqual(r.phase, .withdrawn)
        XCTAssertNil(r.linkLost(now: t0 + .milliseconds(500), interval: interval), "the app of this loss sees the return too")
        r.announced(now: t0 + .milliseconds(1500))
        XCTAssertEqual(r.phase, .idle)
        XCTAssertEqual(r.withdrew(), 1, "the loss during the pause was counted")
    }

    func testReannouncementsAreAtLeastTheIntervalApart() {
        var r = StorePOSReannounce()
        let t0 = MonotonicInstant.now
        _ = r.linkLost(now: t0, interval: interval)
        _ = r.withdrew()
        r.announced(now: t0 + .seconds(2))
        XCTAssertEqual(r.linkLost(now: t0 + .seconds(5), interval: interval), .seconds(7))
        _ = r.withdrew()
        r.announced(now: t0 + .seconds(14))
        XCTAssertEqual(r.linkLost(now: t0 + .seconds(30), interval: interval), .zero)
    }
}
