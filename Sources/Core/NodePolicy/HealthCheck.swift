import Foundation

/// A monitoring plugin's state, with its exit code (Nagios plugin guidelines: 0 OK, 1 WARNING,
/// 2 CRITICAL, 3 UNKNOWN).
public enum HealthState: Int32, Sendable, Comparable {
    /// Everything within its thresholds.
    case ok = 0
    /// Working, but above a warning threshold.
    case warning = 1
    /// Not working, or above a critical threshold.
    case critical = 2
    /// The check could not tell (bad arguments, an unexpected answer, no permission).
    case unknown = 3

    /// `OK`, `WARNING`, `CRITICAL`, `UNKNOWN`.
    public var label: String {
        switch self {
        case .ok: return "OK"
        case .warning: return "WARNING"
        case .critical: return "CRITICAL"
        case .unknown: return "UNKNOWN"
        }
    }

    /// Severity order for combining findings: UNKNOWN ranks between WARNING and CRITICAL, as
    /// the plugin guidelines combine them (a CRITICAL finding wins over an UNKNOWN one).
    private var rank: Int {
        switch self {
        case .ok: return 0
        case .warning: return 1
        case .unknown: return 2
        case .critical: return 3
        }
    }

    /// Compares by severity.
    public static func < (a: HealthState, b: HealthState) -> Bool { a.rank < b.rank }
}

/// A `WARN[,CRIT]` threshold pair: a value above `warning` is WARNING, above `critical` is
/// CRITICAL. Either may be absent (`,1000` has no warning).
public struct HealthThreshold: Sendable, Equatable {
    /// Above this: WARNING.
    public var warning: Int64?
    /// Above this: CRITICAL.
    public var critical: Int64?

    /// A threshold from its parts.
    public init(warning: Int64?, critical: Int64?) {
        self.warning = warning
        self.critical = critical
    }

    /// Parses `WARN,CRIT`, `,CRIT`, `WARN,` or a single number, which is the warning threshold
    /// or, with `singleIsCritical`, the critical one. Nil for anything else (negative numbers,
    /// a warning above the critical threshold, text).
    public init?(parsing text: String, singleIsCritical: Bool = false) {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        func number(_ s: String) -> Int64?? {
            if s.isEmpty { return .some(nil) }
            guard let n = Int64(s), n >= 0 else { return nil }
            return .some(n)
        }
        switch parts.count {
        case 1:
            guard !parts[0].isEmpty, let n = number(parts[0]) else { return nil }
            self = singleIsCritical ? HealthThreshold(warning: nil, critical: n) : HealthThreshold(warning: n, critical: nil)
        case 2:
            guard let w = number(parts[0]), let c = number(parts[1]), w != nil || c != nil else { return nil }
            if let w, let c, w > c { return nil }
            self = HealthThreshold(warning: w, critical: c)
        default:
            return nil
        }
    }

    /// The state of `value`.
    public func state(of value: Int64) -> HealthState {
        if let c = critical, value > c { return .critical }
        if let w = warning, value > w { return .warning }
        return .ok
    }

    /// `;WARN;CRIT` for performance data (an absent threshold left empty).
    var perfdataSuffix: String { ";\(warning.map(String.init) ?? "");\(critical.map(String.init) ?? "")" }

    /// What was crossed, for the summary: "above 100" or "above 1000 (critical)".
    func crossed(_ state: HealthState) -> String {
        state == .critical ? "above \(critical ?? 0) (critical)" : "above \(warning ?? 0)"
    }
}

/// The thresholds of `ordersync check`.
public struct HealthThresholds: Sendable, Equatable {
    /// Operations a slave (or, on a master, its most lagging connected terminal) may be behind.
    public var lag: HealthThreshold
    /// Local changes a slave may hold in its outbox.
    public var outbox: HealthThreshold
    /// Seconds a slave may be without a live link to its master.
    public var silence: HealthThreshold
    /// Seconds a master's paired terminal may be away (no open link).
    public var away: HealthThreshold

    /// `--max-away 600`: a paired terminal away for more than ten minutes is a warning.
    public static let defaultAway = HealthThreshold(warning: 600, critical: nil)

    /// The defaults: `--max-lag 1000`, `--max-outbox 100`, `--max-away 600` (warnings),
    /// `--max-silence 60` (critical).
    public static let defaults = HealthThresholds(
        lag: HealthThreshold(warning: 1000, critical: nil), outbox: HealthThreshold(warning: 100, critical: nil),
        silence: HealthThreshold(warning: nil, critical: 60))

    /// Thresholds from their parts.
    public init(
        lag: HealthThreshold, outbox: HealthThreshold, silence: HealthThreshold, away: HealthThreshold = HealthThresholds.defaultAway
    ) {
        self.lag = lag
        self.outbox = outbox
        self.silence = silence
        self.away = away
    }
}

/// What `ordersync check` prints and exits with.
public struct HealthReport: Sendable, Equatable {
    /// The overall state (the worst finding).
    public var state: HealthState
    /// What the node is and what is wrong, without the state.
    public var summary: String
    /// Performance data (`terminals=3 lag=0;100;1000 outbox=0`), empty when the node could not
    /// be asked.
    public var perfdata: String

    /// The one line of the plugin output: `ORDERSYNC OK - master shop1, ... | terminals=3 ...`.
    public var line: String {
        "ORDERSYNC \(state.label) - \(summary)" + (perfdata.isEmpty ? "" : " | \(perfdata)")
    }

    /// A report without performance data (the daemon could not be asked).
    public init(state: HealthState, summary: String, perfdata: String = "") {
        self.state = state
        self.summary = summary
        self.perfdata = perfdata
    }
}

/// Judges a node's status against thresholds: pure, so every rule is tested without a daemon.
///
/// CRITICAL: the store cannot be read or its last commit failed; another master of the store
/// on the LAN; a slave without a live link to its master for longer than the silence
/// threshold's critical value, or refused by its master (pair again).
/// WARNING: a master not published on the LAN; lag, outbox, silence or a paired terminal's
/// time away above a warning threshold; a slave's clock past the bound (Docs/PROTOCOL.md 4.8).
/// Above a critical value they are CRITICAL. A master's lag is that of its most lagging paired
/// terminal, connected or away.
public enum HealthCheck {
    /// The report for a status.
    public static func evaluate(_ status: NodeStatus, thresholds: HealthThresholds) -> HealthReport {
        switch status {
        case .master(let m): return evaluate(m, thresholds)
        case .slave(let s): return evaluate(s, thresholds)
        }
    }

    private static func report(_ base: String, _ findings: [(HealthState, String)], perfdata: [String]) -> HealthReport {
        let worst = findings.map(\.0).max() ?? .ok
        let problems = findings.filter { $0.0 != .ok }.map(\.1)
        let summary = problems.isEmpty ? base : "\(base): \(problems.joined(separator: "; "))"
        return HealthReport(state: worst, summary: summary, perfdata: perfdata.joined(separator: " "))
    }

    static func evaluate(_ m: MasterStatus, _ t: HealthThresholds) -> HealthReport {
        // Connected terminals that acknowledged something on this link (StorePOS clients never
        // do), and paired terminals away.
        let away = m.away ?? []
        let lags = m.peers.compactMap(\.lag) + away.map(\.behind)
        let maxLag = lags.max() ?? 0
        var findings = storeFindings(m.ready)
        for r in m.rivals ?? [] {
            findings.append((.critical, "another master of store \(m.store) on the LAN: \(r.name) at \(r.address) (\(r.hostName))"))
        }
        switch m.ready?.published {
        case .failed: findings.append((.warning, "not published on the LAN (avahi \(m.avahi.rawValue))"))
        case .pending: findings.append((.warning, "publication not confirmed by Avahi yet"))
        case .ok, .notUsed, nil: break
        }
        let lagState = t.lag.state(of: maxLag)
        let laggard = away.max { $0.behind < $1.behind }.flatMap { a in a.behind == maxLag && maxLag > 0 ? " (\(a.name), away)" : nil }
        findings.append((lagState, "max lag \(maxLag)\(laggard ?? "") \(t.lag.crossed(lagState))"))
        let longest = away.map(\.awaySeconds).max() ?? 0
        for a in away.sorted(by: { $0.awaySeconds > $1.awaySeconds }) {
            let state = t.away.state(of: a.awaySeconds)
            findings.append((state, "\(a.name) away \(a.awaySeconds) s, \(a.behind) behind, \(t.away.crossed(state)) s"))
        }
        findings += clockFindings(m)
        let terminals = m.peers.count
        let awayText = away.isEmpty ? "" : ", \(away.count) away"
        let base = "master \(m.store), \(terminals) terminal\(terminals == 1 ? "" : "s")\(awayText), max lag \(maxLag)"
        return report(
            base, findings,
            perfdata: [
                "terminals=\(terminals)", "lag=\(maxLag)\(t.lag.perfdataSuffix)", "outbox=0", "away=\(away.count)",
                "away_seconds=\(longest)s\(t.away.perfdataSuffix)",
            ])
    }

    /// CRITICAL when the store cannot be read or its commits fail, naming the problem and file.
    private static func storeFindings(_ ready: NodeReadiness?) -> [(HealthState, String)] {
        if let f = ready?.storeFailure { return [(.critical, "store failing: \(f.summary)")] }
        return ready?.store == .failed ? [(.critical, "store not readable")] : []
    }

    static func evaluate(_ s: SlaveStatus, _ t: HealthThresholds) -> HealthReport {
        let link = s.ready?.link ?? NodeReadiness.Link(state: s.master.state, pairing: s.pairing)
        // An older daemon without `notLiveSeconds`: the time in the current state.
        let silence = link == .live ? 0 : (s.master.notLiveSeconds ?? s.master.sinceSeconds)
        var findings = storeFindings(s.ready)
        if link == .pairingRequired { findings.append((.critical, "the master refuses this terminal: pair it again")) }
        let silenceState = t.silence.state(of: silence)
        let why = s.master.lastError.map { ", last error: \($0)" } ?? ""
        findings.append(
            (silenceState, "not live to its master for \(silence) s (\(link.rawValue)\(why)) \(t.silence.crossed(silenceState)) s"))
        // Not live, the lag is unknown (the master may have gone on): the silence speaks for it.
        if let lag = s.lag {
            let lagState = t.lag.state(of: lag)
            findings.append((lagState, "lag \(lag) \(t.lag.crossed(lagState))"))
        }
        let outboxState = t.outbox.state(of: Int64(s.outbox))
        findings.append((outboxState, "outbox \(s.outbox) \(t.outbox.crossed(outboxState))"))
        findings += clockFindings(s)
        let lagText = s.lag.map(String.init) ?? "unknown"
        let base = "slave \(s.name) of \(s.store ?? "no store yet"), link \(link.rawValue), lag \(lagText), outbox \(s.outbox)"
        return report(
            base, findings,
            perfdata: [
                // `U`: the plugin guidelines' value for "could not be determined".
                "lag=\(s.lag.map(String.init) ?? "U")\(t.lag.perfdataSuffix)", "outbox=\(s.outbox)\(t.outbox.perfdataSuffix)",
                "silence=\(silence)s\(t.silence.perfdataSuffix)",
            ])
    }
}
