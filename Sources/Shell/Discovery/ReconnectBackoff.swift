/// Delays between reconnection attempts: `initial`, doubling, at most `maximum`; back to the
/// start after a success. Used for the Avahi client's restarts (1 s doubling to 30 s, no jitter)
/// and a slave's reconnects to its master (0.25 s doubling to 5 s, jittered so fifty terminals
/// do not come back in the same instant).
public struct ReconnectBackoff: Sendable {
    /// How a delay is spread.
    public enum Jitter: Sendable {
        /// Every delay exactly as computed.
        case none
        /// Each delay `d` drawn from `[d/2, d]`; `random` picks a number in the range it is
        /// given (inject a fixed one for deterministic tests).
        case downToHalf(random: @Sendable (ClosedRange<Int64>) -> Int64 = { Int64.random(in: $0) })
    }

    /// The first delay.
    public let initial: Duration
    /// The largest delay.
    public let maximum: Duration
    /// How each delay is spread.
    public let jitter: Jitter
    /// The delay before jitter that `next()` gives now.
    private var current: Duration

    /// A backoff from `initial` doubling up to `maximum`.
    public init(initial: Duration, maximum: Duration, jitter: Jitter = .none) {
        precondition(initial > .zero && maximum >= initial, "a backoff needs 0 < initial <= maximum")
        self.initial = initial
        self.maximum = maximum
        self.jitter = jitter
        self.current = initial
    }

    /// The delay to wait now; the next one doubles, up to `maximum`.
    public mutating func next() -> Duration {
        let delay = current
        current = current >= maximum / 2 ? maximum : current * 2
        return spread(delay)
    }

    /// The longest delay, for a failure that retrying soon would only repeat; later delays stay
    /// at the longest until `reset()`.
    public mutating func nextLongest() -> Duration {
        current = maximum
        return spread(maximum)
    }

    /// Starts over from `initial` (after a successful connection).
    public mutating func reset() {
        current = initial
    }

    private func spread(_ delay: Duration) -> Duration {
        switch jitter {
        case .none:
            return delay
        case .downToHalf(let random):
            let nanoseconds = delay.nanosecondCount
            let drawn = random((nanoseconds / 2)...nanoseconds)
            return .nanoseconds(min(nanoseconds, max(nanoseconds / 2, drawn)))
        }
    }
}

extension Duration {
    /// Whole nanoseconds, saturating at `Int64.max` (about 292 years).
    var nanosecondCount: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return .max }
        let (sum, overflowSum) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
        return overflowSum ? .max : sum
    }
}
