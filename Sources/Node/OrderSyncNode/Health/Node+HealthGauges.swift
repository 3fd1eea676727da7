import NodePolicy

extension MasterNode {
    /// The health series' values from the master's status of this scrape.
    func healthGauges(_ status: MasterStatus) -> HealthGauges {
        var g = HealthGauges()
        g.ready = status.state == .ready
        g.storeReady = status.ready?.store == .ok
        g.published = status.ready?.published == .ok
        g.rivals = status.rivals?.count ?? 0
        g.terminals = terminalPresence(nowMillis: WallClock.nowMillis())
        return g
    }
}

extension SlaveNode {
    /// The health series' values from the slave's status of this scrape.
    func healthGauges(_ status: SlaveStatus) -> HealthGauges {
        var g = HealthGauges()
        g.ready = status.state == .ready
        g.storeReady = status.ready?.store == .ok
        return g
    }
}
