/// Clock sense in `ordersync status` and `ordersync check` (Docs/PROTOCOL.md 4.8): the same
/// `clock` members the status carries, as lines and findings.
extension ClockStatus {
    /// `600.0 s ahead`, `12.5 s behind`, `in step` (within a second).
    public var offsetText: String {
        guard abs(offsetMillis) >= 1000 else { return "in step" }
        let seconds = Double(abs(offsetMillis)) / 1000
        let amount = seconds >= 120 ? "\((seconds / 60 * 10).rounded() / 10) min" : "\((seconds * 10).rounded() / 10) s"
        return amount + (offsetMillis > 0 ? " ahead" : " behind")
    }

    /// `10.0 min ahead of the master`, `45.5 s behind the master`, `in step with the master`.
    var againstMaster: String {
        if abs(offsetMillis) < 1000 { return "in step with the master" }
        return offsetText + (offsetMillis > 0 ? " of the master" : " the master")
    }

    /// `10.0 min ahead of the master (over the 30 s bound: set its time, …)`.
    var line: String {
        againstMaster + (skewed ? " (over the \(boundMillis / 1000) s bound: set its time, timedatectl set-ntp true)" : "")
    }
}

extension StatusText {
    /// A master: the connected slaves whose clock is past the bound, one line each.
    static func clockLines(_ m: MasterStatus) -> [String] {
        m.peers.compactMap { p in
            guard let c = p.clock, c.skewed else { return nil }
            return "clock:     \(p.terminal ?? p.address) \(c.line)"
        }
    }

    /// A slave: its own clock against its master's, once measured.
    static func clockLines(_ s: SlaveStatus) -> [String] {
        s.clock.map { ["clock:     \($0.line)"] } ?? []
    }
}

extension HealthCheck {
    /// WARNING for each connected slave (on a master) or for this slave whose clock is past the
    /// bound: its orders are stamped on the master's clock meanwhile, but the machine's time is
    /// wrong.
    static func clockFindings(_ m: MasterStatus) -> [(HealthState, String)] {
        m.peers.compactMap { p in
            guard let c = p.clock, c.skewed else { return nil }
            return (.warning, "clock of \(p.terminal ?? p.address) \(c.offsetText) (bound \(c.boundMillis / 1000) s)")
        }
    }

    /// See `clockFindings(_:)` for a master.
    static func clockFindings(_ s: SlaveStatus) -> [(HealthState, String)] {
        guard let c = s.clock, c.skewed else { return [] }
        return [(.warning, "clock \(c.againstMaster) (bound \(c.boundMillis / 1000) s)")]
    }
}
