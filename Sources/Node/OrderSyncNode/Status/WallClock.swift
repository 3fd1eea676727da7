import Foundation
import SyncCore

/// Wall-clock time for records and `created` defaults; never used to order operations.
enum WallClock {
    /// Test only: `ORDERSYNC_TEST_CLOCK_OFFSET=SECONDS` (may be negative) sets this process's
    /// wall clock that far off, as a till whose clock is wrong (Tests/lan/test_clock_skew.py).
    /// Read once at start; never set outside tests (Docs/PROTOCOL.md 4.8).
    static let testOffsetMillis: Int64 = {
        guard let raw = ProcessInfo.processInfo.environment["ORDERSYNC_TEST_CLOCK_OFFSET"], let s = Double(raw) else { return 0 }
        return Int64(s * 1000)
    }()

    static func nowMillis() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000 + testOffsetMillis
    }

    static func now() -> OrderTimestamp { OrderTimestamp(epochMillis: nowMillis()) }
}
