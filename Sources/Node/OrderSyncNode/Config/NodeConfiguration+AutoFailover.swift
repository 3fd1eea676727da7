import SyncCore

extension NodeConfiguration {
    /// Turns `--auto-failover` on (when `on`): idle links are pinged at least every 208 ms
    /// (`AutoFailoverTiming.heartbeatMillis`), so that a healthy peer is heard well within the
    /// lease and the margin covers the gap between two heartbeats.
    public mutating func enableAutoFailover(_ on: Bool) {
        guard on else { return }
        autoFailover = true
        let heartbeat = Duration.milliseconds(AutoFailoverTiming.standard.heartbeatMillis)
        if pingInterval > heartbeat { pingInterval = heartbeat }
    }
}
