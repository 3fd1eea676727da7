import XCTest

@testable import EventLoopIO

final class MonotonicInstantTests: XCTestCase {
    func testInstantsAddAndSubtractDurations() {
        let start = MonotonicInstant.now
        let later = start + .milliseconds(1500)
        XCTAssertLessThan(start, later)
        XCTAssertEqual(later - start, .milliseconds(1500))
        XCTAssertEqual(start - later, .milliseconds(-1500))
        XCTAssertEqual(later - .milliseconds(1500), start)
        XCTAssertLessThanOrEqual(start, MonotonicInstant.now, "the clock never goes back")
    }

    func testWholeMillisecondsRoundTowardZero() {
        XCTAssertEqual(Duration.seconds(5).wholeMilliseconds, 5000)
        XCTAssertEqual(Duration.microseconds(1999).wholeMilliseconds, 1)
        XCTAssertEqual(Duration.zero.wholeMilliseconds, 0)
    }

    func testPollTimeoutRoundsUpSoAWaitNeverEndsBeforeItsDeadline() {
        XCTAssertEqual(Duration.microseconds(1).pollTimeout, 1)
        XCTAssertEqual(Duration.microseconds(1001).pollTimeout, 2)
        XCTAssertEqual(Duration.milliseconds(30).pollTimeout, 30)
        XCTAssertEqual(Duration.zero.pollTimeout, 0)
        XCTAssertEqual(Duration.milliseconds(-5).pollTimeout, 0, "a past deadline does not wait")
        XCTAssertEqual(Duration.seconds(Int64(Int32.max)).pollTimeout, Int32.max)
    }
}
