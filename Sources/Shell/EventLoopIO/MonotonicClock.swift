import Glibc

/// Reads `CLOCK_MONOTONIC`: time that never jumps with wall-clock changes.
public enum MonotonicClock {
    /// Milliseconds since an arbitrary fixed point (boot).
    public static func milliseconds() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Int64(time.tv_sec) * 1000 + Int64(time.tv_nsec) / 1_000_000
    }
}

extension Duration {
    /// The duration in whole milliseconds, rounded toward zero (what epoll and the timer queue
    /// count in).
    public var wholeMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
