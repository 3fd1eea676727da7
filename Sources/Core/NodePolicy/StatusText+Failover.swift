/// The lines of `ordersync status` about failover (Docs/PROTOCOL.md 7).
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
        return lines
    }

    /// A slave's term, the master it follows and what its standby copy holds.
    static func failoverLines(_ s: SlaveStatus) -> [String] {
        var lines: [String] = []
        if let term = s.term { lines.append("term:      \(term)") }
        if let f = s.following { lines.append("following: \(f.name ?? "-") (\(f.id))") }
        if let held = s.held { lines.append("held:      \(held) (its standby copy, on disk)") }
        return lines
    }
}
