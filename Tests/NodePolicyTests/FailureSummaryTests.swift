import XCTest

@testable import NodePolicy

/// A streak of failures as the log shows it: the first in full, then summaries.
final class FailureSummaryTests: XCTestCase {
    func testRepeatedFailuresAreLoggedFirstThenSummarisedOncePerInterval() {
        var summary = FailureSummary(interval: .seconds(60))
        var stamps = 0
        func stamp() -> String {
            stamps += 1
            return "T\(stamps)"
        }
        XCTAssertEqual(summary.failed(now: .seconds(100), stamp: stamp()), .first)
        // 11 more within the minute: quiet.
        for i in 1...10 { XCTAssertEqual(summary.failed(now: .seconds(100 + i * 5), stamp: stamp()), .quiet) }
        XCTAssertEqual(summary.failed(now: .seconds(160), stamp: stamp()), .summary(count: 11, since: "T1"))
        XCTAssertEqual(summary.failed(now: .seconds(170), stamp: stamp()), .quiet)
        XCTAssertEqual(summary.failed(now: .seconds(219), stamp: stamp()), .quiet)
        XCTAssertEqual(summary.failed(now: .seconds(220), stamp: stamp()), .summary(count: 3, since: "T1"))
        XCTAssertEqual(stamps, 1, "the wall clock is read once per streak")
        let ended = summary.succeeded()
        XCTAssertEqual(ended?.failures, 15)
        XCTAssertEqual(ended?.since, "T1")
        XCTAssertNil(summary.succeeded(), "nothing failed since")
        XCTAssertEqual(summary.failed(now: .seconds(300), stamp: stamp()), .first, "a new streak starts in full")
        XCTAssertEqual(summary.since, "T2")
    }
}
