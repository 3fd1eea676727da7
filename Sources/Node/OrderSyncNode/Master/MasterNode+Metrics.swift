import EventLoopIO
import Logging
import SyncCore
import WebSocketTransport

extension MasterNode {
    /// The exposition, from the node's status at this moment and what it counted.
    func renderMetrics() -> [UInt8] {
        loop.assertInEventLoop()
        let status = status()
        var snapshot = NodeMetrics.Snapshot(seq: status.seq)
        snapshot.refusals = engine.refusals
        for p in status.peers { snapshot.connected[p.protocol, default: 0] += 1 }
        snapshot.terminals = status.terminals.map { .init(id: $0.terminalId, name: $0.name, lag: $0.lag, outbox: $0.outbox) }
        for s in sessions.values { snapshot.liveTraffic.add(s.transport.traffic) }
        snapshot.term = status.term ?? 1
        if let voters = status.voters { metrics.voters.set(Int64(voters.count)) }
        snapshot.standbyLag = status.peers.compactMap { p in
            guard let id = p.terminalId, let lag = p.standbyLag else { return nil }
            return (id, p.terminal ?? id, lag)
        }
        snapshot.health = healthGauges(status)
        metrics.setClockOffsets(
            status.peers.compactMap { p in p.terminalId.flatMap { id in p.clock.map { (id, p.terminal ?? id, $0.offsetMillis) } } })
        return metrics.render(snapshot)
    }

    /// A group is on disk: its operations are counted and each is logged once (`order.applied`,
    /// info), built only when the level lets it through.
    func noteCommitted(_ operations: [GroupedOperation]) {
        for op in operations { metrics.counts.applied[op.operation.rawValue] += 1 }
        guard logger.logLevel <= .info else { return }
        for op in operations {
            var meta: Logger.Metadata = [
                "seq": .stringConvertible(op.seq), "op": "\(op.operation)",
                "order": "\(op.orderUUIDs.joined(separator: ","))", "terminal": "\(op.origin)",
            ]
            if op.orderUUIDs.count != 1 { meta["orders"] = .stringConvertible(op.orderUUIDs.count) }
            if let s = op.sender, let id = engine.peers[s]?.terminalId { meta["terminal.id"] = "\(id)" }
            if let id = op.opId { meta["op.id"] = "\(id)" }
            logger.info("order.applied", metadata: meta)
        }
    }
}
