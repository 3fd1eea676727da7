import SyncCore

extension NodeConfiguration {
    /// Turns `--auto-failover` on (when `on`): idle links are pinged at least every second, so
    /// that a healthy peer is heard well within the lease (`AutoFailoverTiming.standard`).
    public mutating func enableAutoFailover(_ on: Bool) {
        guard on else { return }
        autoFailover = true
        let heartbeat = Duration.milliseconds(AutoFailoverTiming.standard.leaseMillis / 3)
        if pingInterval > heartbeat { pingInterval = heartbeat }
    }
}
