import Glibc

/// A point in time on `CLOCK_MONOTONIC`, the clock the event loop's timers run on (``EventLoop/now``).
///
/// It never jumps with wall-clock changes and means nothing outside this boot, so it is never
/// stored or sent: times in the database and on the wire are wall-clock milliseconds since the
/// Unix epoch (the `...Millis` integers).
public struct MonotonicInstant: Comparable, Hashable, Sendable {
    /// Time since an arbitrary fixed point (boot): for pure code that counts time as a
    /// `Duration` from some origin.
    public let sinceBoot: Duration

    /// The current instant.
    public static var now: MonotonicInstant {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return MonotonicInstant(sinceBoot: .seconds(Int64(time.tv_sec)) + .nanoseconds(Int64(time.tv_nsec)))
    }

    /// `true` when `lhs` comes before `rhs`.
    public static func < (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Bool {
        lhs.sinceBoot < rhs.sinceBoot
    }

    /// The instant `duration` after `instant`.
    public static func + (instant: MonotonicInstant, duration: Duration) -> MonotonicInstant {
        MonotonicInstant(sinceBoot: instant.sinceBoot + duration)
    }

    /// The instant `duration` before `instant`.
    public static func - (instant: MonotonicInstant, duration: Duration) -> MonotonicInstant {
        MonotonicInstant(sinceBoot: instant.sinceBoot - duration)
    }

    /// The time from `earlier` to `later` (negative when `later` comes first).
    public static func - (later: MonotonicInstant, earlier: MonotonicInstant) -> Duration {
        later.sinceBoot - earlier.sinceBoot
    }
}

extension Duration {
    /// The duration in whole milliseconds, rounded toward zero: for the C calls that count in
    /// milliseconds (`poll`, `epoll_wait`) and for log and status fields given in milliseconds.
    public var wholeMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    /// A timeout for `poll` or `epoll_wait`: whole milliseconds rounded up (so a wait never
    /// ends just before a deadline and spins), zero for a past deadline, at most `Int32.max`.
    var pollTimeout: Int32 {
        guard self > .zero else { return 0 }
        let whole = wholeMilliseconds
        return Int32(clamping: self > .milliseconds(whole) ? whole + 1 : whole)
    }
}
