/// Refusals of one kind from one source (an address or a paired terminal), as the log shows
/// them: the first `fullLines` of a window in full, the rest only counted, and one summary
/// line when the window (a minute) is over with how many were left out. A flood from one host
/// then costs a few lines a minute, not one per refused message, and nothing goes unnoticed.
/// Pure: the caller passes the time, in milliseconds.
public struct RefusalLogSummary: Sendable {
    /// One source's current window.
    struct Window: Equatable, Sendable {
        var startedMillis: Int64
        var logged = 0
        var leftOut = 0
        /// The last reason left out, for the summary.
        var lastReason = ""
    }

    /// A summary line due: `count` refusals of `event` from `source` were not logged in full
    /// in the window that began at `sinceMillis`.
    public struct Due: Equatable, Sendable {
        public var event: String
        public var source: String
        public var count: Int
        public var sinceMillis: Int64
        public var lastReason: String
    }

    /// How long one window lasts.
    public var windowMillis: Int64
    /// Lines logged in full per source and window.
    public var fullLines: Int
    private var windows: [String: Window] = [:]
    /// The summaries that came due as new windows began (handed out by `due(now:)`).
    private var pending: [Due] = []

    /// Twenty lines in full per source and minute (a client's handful of mistakes is logged
    /// line by line), then one summary.
    public init(windowMillis: Int64 = 60_000, fullLines: Int = 20) {
        self.windowMillis = max(1, windowMillis)
        self.fullLines = max(0, fullLines)
    }

    /// True when summaries came due as windows ended in `note` (read them with `due(now:)`).
    public var hasPending: Bool { !pending.isEmpty }

    /// One refusal of `event` from `source` at `now`: true when it is logged in full.
    public mutating func note(_ event: String, source: String, reason: String, now: Int64) -> Bool {
        let key = event + "\u{0}" + source
        if let w = windows[key], now - w.startedMillis >= windowMillis || now < w.startedMillis {
            close(key, w)
        }
        var w = windows[key] ?? Window(startedMillis: now)
        defer { windows[key] = w }
        guard w.logged < fullLines else {
            w.leftOut += 1
            w.lastReason = reason
            return false
        }
        w.logged += 1
        return true
    }

    /// The summary lines due at `now` (windows that are over and left something out), oldest
    /// first; windows that are over are forgotten.
    public mutating func due(now: Int64) -> [Due] {
        for (key, w) in windows where now - w.startedMillis >= windowMillis || now < w.startedMillis {
            close(key, w)
        }
        defer { pending = [] }
        return pending.sorted { ($0.sinceMillis, $0.event, $0.source) < ($1.sinceMillis, $1.event, $1.source) }
    }

    /// Ends a window, keeping its summary if it left anything out.
    private mutating func close(_ key: String, _ w: Window) {
        windows[key] = nil
        guard w.leftOut > 0, let sep = key.firstIndex(of: "\u{0}") else { return }
        pending.append(
            Due(
                event: String(key[..<sep]), source: String(key[key.index(after: sep)...]), count: w.leftOut,
                sinceMillis: w.startedMillis, lastReason: w.lastReason))
    }
}
