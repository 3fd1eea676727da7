/// Repeated failures of one kind (a slave's attempts on an unreachable master), as the log
/// shows them: the first of a streak, then at most one summary per interval with how many
/// failed since, and the streak's total once it ends. Pure: the caller passes the time.
public struct FailureSummary {
    /// What to log for a failure.
    public enum Report: Equatable {
        /// The first failure of a streak: log it in full.
        case first
        /// A summary is due: `count` failures since the last line, the streak began at `since`.
        case summary(count: Int, since: String)
        /// Counted, not logged (debug at most).
        case quiet
    }

    /// The least time between two lines of one streak.
    let interval: Duration
    /// Failures in the current streak.
    private(set) var streak = 0
    /// When the streak began (log timestamp text).
    private(set) var since = ""
    private var lastLine = Duration.zero
    private var sinceLine = 0

    /// No streak yet; at most one summary line per `interval`.
    public init(interval: Duration) {
        self.interval = interval
    }

    /// One more failure at `now` (any monotonic clock); `stamp` is the wall-clock time as the
    /// log writes it, read only when a streak begins.
    public mutating func failed(now: Duration, stamp: @autoclosure () -> String) -> Report {
        streak += 1
        if streak == 1 {
            since = stamp()
            lastLine = now
            sinceLine = 0
            return .first
        }
        sinceLine += 1
        guard now - lastLine >= interval else { return .quiet }
        let count = sinceLine
        lastLine = now
        sinceLine = 0
        return .summary(count: count, since: since)
    }

    /// The streak ended (connected again): how many failed and since when, nil if none did.
    public mutating func succeeded() -> (failures: Int, since: String)? {
        defer {
            streak = 0
            sinceLine = 0
        }
        return streak > 0 ? (streak, since) : nil
    }
}
