import Foundation

/// Renders a node's status (`ordersync status`) for people. Pure: the time a pairing window's
/// countdown is measured from is given (`nowMillis`, wall-clock milliseconds since 1970).
public enum StatusText {
    /// Multi-line text of a status at `nowMillis`.
    public static func render(_ status: NodeStatus, nowMillis: Int64) -> String {
        switch status {
        case .master(let m): return render(m, nowMillis: nowMillis)
        case .slave(let s): return render(s)
        }
    }

    /// A master: its store, service and terminals.
    public static func render(_ m: MasterStatus, nowMillis: Int64) -> String {
        var lines = common(role: m.role, store: m.store, name: m.name, orders: m.orders, seq: m.seq, avahi: m.avahi, nodeId: m.nodeId)
        lines += readinessLines(m.state, m.ready, m.lastError)
        lines.append("port:      \(m.port)")
        lines.append("service:   \(m.serviceName ?? "-") (\(m.serviceType))")
        if let previous = m.previousNodeId { lines.append("previous node id: \(previous) (still answers)") }
        lines.append("pairing:   \(pairingText(m.pairing, nowMillis: nowMillis))")
        lines.append("paired:    \(m.pairedTerminals) terminal\(m.pairedTerminals == 1 ? "" : "s")")
        lines += failoverLines(m)
        lines += terminalLines(m)
        lines += rivalLines(m)
        lines += clockLines(m)
        lines.append("tombstones: \(m.tombstones)")
        if let n = m.storeposForeign, n > 0 {
            lines.append("storepos:  \(n) foreign order\(n == 1 ? "" : "s") waiting (`ordersync storepos foreign`)")
        }
        return lines.joined(separator: "\n")
    }

    /// The pairing windows in one line, at `nowMillis`.
    static func pairingText(_ p: PairingWindowStatus, nowMillis: Int64) -> String {
        let locked = p.lockedOutAddresses > 0 ? ", \(p.lockedOutAddresses) address(es) locked out" : ""
        switch p.state {
        case .open:
            let left = max(0, ((p.expiresAtMillis ?? 0) - nowMillis) / 1000)
            return "\(p.openCodes) code(s) open, the next closes in \(left) s" + (p.name.map { " (for \($0))" } ?? "") + locked
        case .used: return "closed (used by \(p.name ?? "a terminal"))" + locked
        case .expired: return "closed (expired)" + locked
        case .closed: return "closed" + locked
        }
    }

    /// A slave: its link to the master, how far behind it is and what waits in its outbox.
    public static func render(_ s: SlaveStatus) -> String {
        var lines = common(role: s.role, store: s.store, name: s.name, orders: s.orders, seq: s.seq, avahi: s.avahi, nodeId: s.nodeId)
        lines += readinessLines(s.state, s.ready, s.lastError)
        let pairing = s.pairing == .paired ? "" : " (\(s.pairing.rawValue))"
        lines.append("master id: \(s.masterId ?? "not paired")\(pairing)")
        let link = s.master
        lines.append("master:    \(link.state.rawValue) \(link.url ?? "-") \(link.serviceName ?? "-") (for \(link.sinceSeconds) s)")
        if let e = link.lastError { lines.append("last error: \(e)") }
        if let lag = s.lag {
            lines.append("lag:       \(lag) (master at \(s.masterSeq))")
        } else {
            lines.append("lag:       unknown while not live (master at \(s.masterSeq) when last heard)")
        }
        lines += failoverLines(s)
        lines.append("outbox:    \(s.outbox) local changes waiting for the master")
        lines += clockLines(s)
        return lines.joined(separator: "\n")
    }

    /// `ready: degraded (store ok, link connecting)` and the last error with its time.
    static func readinessLines(_ state: NodeReadyState?, _ ready: NodeReadiness?, _ lastError: NodeError?) -> [String] {
        guard let state, let ready else { return [] }
        var parts = ["store \(ready.store.rawValue)"]
        if let p = ready.published { parts.append("published \(p.rawValue)") }
        if let l = ready.link { parts.append("link \(l.rawValue)") }
        var lines = ["ready:     \(state.rawValue) (\(parts.joined(separator: ", ")))"]
        if let f = ready.storeFailure { lines.append("store failing: \(f.summary): \(f.error)") }
        if let e = lastError { lines.append("last warning: \(e.at) \(e.event): \(e.message)") }
        return lines
    }

    private static func common(
        role: NodeRole, store: String?, name: String, orders: Int, seq: Int64, avahi: AvahiState, nodeId: String
    ) -> [String] {
        [
            "role:      \(role.rawValue)", "store:     \(store ?? "-")", "name:      \(name)",
            "orders:    \(orders)", "seq:       \(seq)", "avahi:     \(avahi.rawValue)", "node id:   \(nodeId)",
        ]
    }

    /// The master's terminals: every open link (with the slave's acknowledged sequence and lag
    /// when it speaks OrderSync), then every known slave that is not connected, with when it
    /// was last seen and how far behind it stayed.
    static func terminalLines(_ m: MasterStatus) -> [String] {
        let away = m.terminals.filter { !$0.connected }
        let known = m.terminals.count
        var lines = ["terminals: \(m.peers.count) connected, \(known) known slave\(known == 1 ? "" : "s"), \(away.count) away"]
        for p in m.peers {
            let heard = String(format: "%.1f s", Double(p.lastSeenMillisAgo) / 1000)
            var line =
                "  connected  \(p.terminal ?? "-")  \(p.address)  \(p.protocol.rawValue)  up \(p.connectedSeconds) s  last heard \(heard) ago"
            // Until a slave acks on this link, what the master recorded of it stands.
            if let acked = p.ackedSeq, let lag = p.lag {
                line += "  acked \(acked)  lag \(lag)"
            } else if let id = p.terminalId, let t = m.terminals.first(where: { $0.terminalId == id }) {
                line += "  acked \(t.ackedSeq)  lag \(t.lag)"
            }
            if let n = p.outbox { line += "  outbox \(n)" }
            if let held = p.held, let lag = p.standbyLag { line += "  standby holds \(held) (lag \(lag))" }
            lines.append(line)
        }
        for t in away {
            var line = "  away       \(t.name)  \(t.address)  last seen \(t.lastSeen)  acked \(t.ackedSeq)  lag \(t.lag)"
            if let a = m.away?.first(where: { $0.terminalId == t.terminalId }) { line += "  away \(a.awaySeconds) s  behind \(a.behind)" }
            if let n = t.outbox { line += "  outbox \(n) when last heard" }
            lines.append(line)
        }
        // Paired terminals that never connected have no record of a slave yet.
        for a in m.away ?? [] where !m.terminals.contains(where: { $0.terminalId == a.terminalId }) {
            lines.append("  away       \(a.name)  never connected  away \(a.awaySeconds) s (since paired)  behind \(a.behind)")
        }
        return lines
    }

    /// Other masters of the store on the LAN, one line each (none: no line).
    static func rivalLines(_ m: MasterStatus) -> [String] {
        (m.rivals ?? []).map { r -> String in
            let term = r.term.map { "\($0)" } ?? "-"
            return "rival:     another master of store \(m.store): \(r.name) at \(r.address) (\(r.hostName)), id \(r.nodeId ?? "-"), "
                + "term \(term), seen since \(NodeError.isoTime(epochMillis: r.sinceMillis))"
        }
    }
}
