import EventLoopIO
import Foundation
import JSON
import NodePolicy
import SyncCore

/// A local write forwarded to the master, waiting for its answer.
struct PendingWrite {
    var message: OperationMessage
    var single: String?
    var respond: LocalAPIServer.Respond
    var timer: TimerHandle?
    /// What the slave applied locally, and refused locally, when it queued the change.
    var localChanges: [OrderChange] = []
    var localErrors: [WireError] = []
}

extension SlaveNode {
    /// The node's static key pair and id, from its data directory.
    var nodeIdentity: NodeIdentity { dataDirectory.nodeIdentity }

    func handleAPI(_ route: LocalAPIRoute, _ respond: LocalAPIServer.Respond) {
        loop.assertInEventLoop()
        // Reads and writes see, and follow, the master's messages already received: they wait
        // for the batch open or committing now.
        afterBatch { [weak self] in self?.answerAPI(route, respond) }
    }

    private func answerAPI(_ route: LocalAPIRoute, _ respond: LocalAPIServer.Respond) {
        switch route {
        case .status:
            respond.encoded(200, NodeStatus.slave(status()))
        case .rejections:
            _ = NodeStartup.answerRead(route, store: writer, respond: respond)
        case .journal:
            respond(
                404,
                LocalAPIRoute.errorBody(
                    code: "no_journal",
                    message: "this node is a slave; the journal is kept by the master (run this on the master's data directory)"))
        case .list, .show:
            // The sync states as they stand now: the page is encoded off the loop.
            let states = engine.syncStates
            _ = NodeStartup.answerRead(route, store: writer, respond: respond, decorate: { SlaveNode.decorated($0, states: states) })
        case .write(let message, let single):
            localWrite(message, single: single, respond: respond)
        }
    }

    func completePendingWrite(opId: String, seq: Int64?, applied: [Order], errors: [WireError], pending: Bool) {
        guard let p = pendingWrites.removeValue(forKey: opId) else { return }
        if let t = p.timer { loop.cancel(t) }
        if pending {
            // Still in the outbox, to be sent again: the change is pending, not refused.
            respondPending(
                single: p.single, operation: p.message.operation, changes: p.localChanges, errors: p.localErrors,
                respond: p.respond)
            return
        }
        var unchanged: [Order] = []
        if applied.isEmpty, errors.isEmpty {
            // Harmless repeats: answer with what the replica holds.
            for raw in p.message.orders {
                if let u = raw.objectValue?["uuid"]?.stringValue, let o = try? writer.read({ try $0.order(uuid: u) }) {
                    unchanged.append(o)
                }
            }
        }
        let answer = LocalAPIRoute.writeAnswer(
            single: p.single, operation: p.message.operation, applied: applied,
            unchanged: unchanged, errors: p.localErrors + errors, seq: seq,
            decorate: { [unowned self] in self.decorated($0) })
        keepAnswer(answer, to: p.message, single: p.single, respond: p.respond)
    }

    /// The link is gone before the master answered: the changes are safe in the outbox and
    /// will be sent again; answer `202 Accepted` (pending).
    func answerPendingWritesAsQueued() {
        let all = pendingWrites
        pendingWrites.removeAll()
        for p in all.values {
            if let t = p.timer { loop.cancel(t) }
            respondPending(
                single: p.single, operation: p.message.operation, changes: p.localChanges, errors: p.localErrors,
                respond: p.respond)
        }
    }

    /// What the slave is doing, for `GET /v1/status`.
    func status() -> SlaveStatus {
        let now = loop.now
        var link = SlaveStatus.Link(
            state: linkState.name, url: linkState.target?.url.description, serviceName: linkState.target?.serviceName,
            sinceSeconds: (now - linkSince).components.seconds,
            lastSeenMillisAgo: linkState.link?.link.map { (now - $0.lastHeard).wholeMilliseconds },
            lastError: lastLinkError)
        link.notLiveSeconds = notLiveSince.map { (now - $0).components.seconds }
        let seen = candidates.seen.map { service in
            SlaveStatus.SeenMaster(name: service.name, address: "\(service.address):\(service.port)", store: service.txt["store"])
        }
        let orders = try? writer.read { try $0.orderCount() }
        var status = SlaveStatus(
            version: NodeVersion.string, store: configuration.store ?? engine.joinedStore, name: terminalName,
            nodeId: nodeIdentity.nodeId, terminalId: terminalId, masterId: trust.status.masterId, pairing: trust.status.pairing,
            seq: engine.lastSeq, masterSeq: max(engine.masterSeq, engine.lastSeq),
            lag: linkState.name == .live ? max(0, engine.masterSeq - engine.lastSeq) : nil, epoch: engine.epoch, orders: orders ?? 0,
            dataDir: configuration.dataDirectory, avahi: avahiState, uptimeSeconds: Int64(Date().timeIntervalSince(startedAt)),
            master: link, pendingWrites: pendingWrites.count, outbox: engine.outboxCount, mastersSeen: seen)
        status.commits = replicaCommits
        let ready = NodeReadiness(
            store: orders == nil ? .failed : .ok, link: NodeReadiness.Link(state: link.state, pairing: trust.status.pairing),
            storeFailure: writer.health.failure)
        status.ready = ready
        status.state = ready.state
        status.lastError = configuration.errorLog.lastError
        status.term = FailoverStatus.term(writer)
        status.following = trust.status.masterId.map { SlaveStatus.FollowedMaster(id: $0, name: linkState.target?.serviceName) }
        status.held = engine.lastSeq
        status.autoFailover = autoFailoverStatus()
        status.clock = ClockStatus(engine.clock)
        return status
    }
}
