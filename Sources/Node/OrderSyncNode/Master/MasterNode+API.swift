import EventLoopIO
import Foundation
import JSON
import NodePolicy
import SyncCore

extension MasterNode {
    /// The node's current static key pair and id (the data directory's key until a rotation).
    var nodeIdentity: NodeIdentity { keys.current }

    func handleAPI(_ route: LocalAPIRoute, _ respond: LocalAPIServer.Respond) {
        loop.assertInEventLoop()
        switch route {
        case .status:
            respond.encoded(200, NodeStatus.master(status()))
        case .list, .show, .journal, .rejections:
            _ = NodeStartup.answerRead(route, store: writer, respond: respond)
        case .write(let message, let single):
            if candidateRefusesWrite(respond) || leaseRefusesWrite(respond) { return }
            // Answered once the group it joins is on disk.
            enqueue(.local(message, origin: respond.caller.origin(node: terminalName), single: single, respond: respond))
        }
    }

    /// The pairing windows as they stand now (expired ones show as expired).
    func pairingStatus() -> PairingWindowStatus {
        let now = WallClock.nowMillis()
        pairing.expire(now: now)
        return pairing.status(now: now)
    }

    /// What the master is doing, for `GET /v1/status`.
    func status() -> MasterStatus {
        let now = loop.now
        let lastSeq = engine.lastSeq
        let known = engine.peers
        let peers = sessions.values.sorted { $0.id < $1.id }.compactMap { s -> MasterStatus.Peer? in
            guard let link = s.link else { return nil }
            let e = known[s.id]
            var peer = MasterStatus.Peer(
                address: s.address, protocol: s.speaksOrderSync ? .ordersync : .storepos,
                terminal: e?.terminalName, terminalId: e?.terminalId, connectedSeconds: (now - s.connectedAt).components.seconds,
                lastSeenMillisAgo: (now - link.lastHeard).wholeMilliseconds, ackedSeq: e?.ackedSeq, lag: e?.ackedSeq.map { lastSeq - $0 },
                outbox: e?.outbox, messages: e?.messagesIn ?? 0, rejected: e?.rejected ?? 0)
            peer.held = e?.held
            peer.standbyLag = e?.held.map { max(0, lastSeq - $0) }
            peer.clock = ClockStatus(e?.clock)
            return peer
        }
        let connectedIds = Set(known.values.compactMap(\.terminalId))
        let terminals = ((try? writer.read { try $0.knownTerminals() }) ?? []).map { t in
            let live = known.values.first { $0.terminalId == t.id }
            let acked = live?.ackedSeq ?? t.ackedSeq
            return MasterStatus.KnownTerminal(
                terminalId: t.id, name: t.name, address: t.address, connected: connectedIds.contains(t.id), ackedSeq: acked,
                lag: max(0, lastSeq - acked), lastSeen: OrderTimestamp(epochMillis: t.lastSeenMillis).storePOSText,
                outbox: live?.outbox ?? t.outbox)
        }
        let orders = try? writer.read { try $0.orderCount() }
        var status = MasterStatus(
            version: NodeVersion.string, store: storeId, name: terminalName, nodeId: nodeIdentity.nodeId, epoch: engine.epoch, seq: lastSeq,
            orders: orders ?? 0, port: port, dataDir: configuration.dataDirectory,
            serviceType: configuration.serviceType, serviceName: publishedName, avahi: avahiState,
            uptimeSeconds: Int64(Date().timeIntervalSince(startedAt)), peers: peers, terminals: terminals,
            tombstones: (try? writer.read { try $0.tombstoneCount() }) ?? 0, pairing: pairingStatus(),
            pairedTerminals: (try? servedTerminals().count) ?? 0,
            previousNodeId: keys.previous?.nodeId)
        status.commits = group.stats
        status.storeposForeign = try? writer.read { try $0.foreignOrders(state: .seen).count }
        let ready = NodeReadiness(
            store: orders == nil ? .failed : .ok, published: NodeReadiness.Published(avahi: avahiState, confirmedName: publishedName),
            storeFailure: writer.health.failure)
        status.ready = ready
        status.state = ready.state
        status.lastError = configuration.errorLog.lastError
        status.term = FailoverStatus.term(writer)
        status.syncReplicas = configuration.syncReplicas
        status.voters = FailoverStatus.voters(writer, masterId: nodeIdentity.nodeId, masterName: terminalName)
        status.autoFailover = autoFailoverStatus()
        let nowMillis = WallClock.nowMillis()
        status.away = terminalPresence(nowMillis: nowMillis).compactMap { $0.away(lastSeq: lastSeq, nowMillis: nowMillis) }
        status.rivals = rivals.list
        return status
    }
}
