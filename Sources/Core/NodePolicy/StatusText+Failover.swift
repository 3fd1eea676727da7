import SyncCore

/// The lines of `ordersync status` about failover (Docs/PROTOCOL.md 7), automatic failover included
/// (`auto:`, 7.14; shown only with `--auto-failover`).
extension StatusText {
    /// A master's term, its `--sync-replicas` and its voters; nothing from an older daemon.
    static func failoverLines(_ m: MasterStatus) -> [String] {
        var lines: [String] = []
        if let term = m.term { lines.append("term:      \(term)") }
        if let n = m.syncReplicas {
            lines.append(
                "replicas:  " + (n == 0 ? "off (local API writes do not wait for a standby)" : "local API writes wait for \(n) standby(s)"))
        }
        if let v = m.voters {
            lines.append("voters:    \(v.count) (majority \(v.majority)): \(v.names.joined(separator: ", "))")
        }
        if let line = autoFailoverLine(m.autoFailover) { lines.append(line) }
        return lines
    }

    /// A slave's term, the master it follows and what its standby copy holds.
    static func failoverLines(_ s: SlaveStatus) -> [String] {
        var lines: [String] = []
        if let term = s.term { lines.append("term:      \(term)") }
        if let f = s.following { lines.append("following: \(f.name ?? "-") (\(f.id))") }
        if let held = s.held { lines.append("held:      \(held) (its standby copy, on disk)") }
        if let line = autoFailoverLine(s.autoFailover) { lines.append(line) }
        return lines
    }

    /// `auto:      held (2 voters heard, majority 2; lease 3000 ms)` on a master,
    /// `auto:      watching (master silent 120 ms; stands after 3600 ms)` on a slave, `off (...)`
    /// when the store has too few voters; nil without the flag (or from an older daemon).
    static func autoFailoverLine(_ a: AutoFailoverStatus?) -> String? {
        guard let a else { return nil }
        let detail: String
        switch a.state {
        case .held, .lapsed:
            let heard = a.heard.map { "\($0) voters heard" } ?? "voters heard: -"
            let majority = a.majority.map { ", majority \($0)" } ?? ""
            detail = "\(heard)\(majority); lease \(a.leaseMillis) ms"
        case .watching, .standing:
            let silent = a.silentMillis.map { "master silent \($0) ms" } ?? "a candidacy runs"
            let after = a.standAfterMillis.map { "; stands after \($0) ms" } ?? ""
            detail = "\(silent)\(after)"
        case .off:
            detail = "fewer than \(AutoFailover.minimumVoters) voters, or this terminal does not vote: promote by hand"
        }
        return "auto:      \(a.state.rawValue) (\(detail))"
    }
}
