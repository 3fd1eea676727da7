import Foundation
import SyncCore

/// Wall-clock time for records and `created` defaults; never used to order operations.
enum WallClock {
    static func nowMillis() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }

    static func now() -> OrderTimestamp { OrderTimestamp(epochMillis: nowMillis()) }
}
