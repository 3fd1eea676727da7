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
