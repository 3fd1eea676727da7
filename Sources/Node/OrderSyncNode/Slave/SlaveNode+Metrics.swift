import EventLoopIO
import Logging
import SyncCore

extension SlaveNode {
    /// The exposition, from the node's status at this moment and what it counted.
    func renderMetrics() -> [UInt8] {
        loop.assertInEventLoop()
        let status = status()
        var snapshot = NodeMetrics.Snapshot(seq: status.seq)
        snapshot.outbox = status.outbox
        snapshot.lag = status.lag
        snapshot.health = healthGauges(status)
        snapshot.linkLive = status.master.state == .live
        snapshot.term = status.term ?? 1
        if let link = linkState.link { snapshot.liveTraffic = link.traffic }
        metrics.setClockOffset(status.clock?.offsetMillis)
        return metrics.render(snapshot)
    }

    /// An attempt on the master failed before its link was up: the first of a streak is a
    /// warning, then one summary a minute (`count`, `since`); each attempt is a debug line.
    func logConnectFailure(_ meta: Logger.Metadata) {
        switch connectFailures.failed(now: loop.now.sinceBoot, stamp: EventLogFormat.timestamp()) {
        case .first:
            var meta = meta
            meta["hint"] = "retrying; further failures are summarised every \(Int(configuration.logSummaryInterval.seconds)) s"
            logger.warning("master.connect_failed", metadata: meta)
        case .summary(let count, let since):
            var meta = meta
            meta["count"] = .stringConvertible(count)
            meta["since"] = "\(since)"
            logger.warning("master.connect_failed", metadata: meta)
        case .quiet:
            logger.debug("master.connect_failed", metadata: meta)
        }
    }

    /// The link to the master is up (secured): after failed attempts one line says so. It is
    /// counted in `master_connects_total` only once synced (`linkSynced`).
    func linkCameUp() {
        if let streak = connectFailures.succeeded() {
            logger.info(
                "master.reconnected", metadata: ["failures": .stringConvertible(streak.failures), "since": "\(streak.since)"])
        }
    }
}
