import Foundation
import JSON
import Posix
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
    func handleAPI(_ route: LocalAPIRoute, _ respond: @escaping LocalAPIServer.Respond) {
        switch route {
        case .status:
            respond(200, status())
        case .rejections:
            _ = NodeStartup.answerRead(route, db: db, respond: respond)
        case .journal:
            respond(404, LocalAPIRoute.errorBody(code: "no_journal",
                message: "this node is a slave; the journal is kept by the master (run this on the master's data directory)"))
        case .list, .show:
            _ = NodeStartup.answerRead(route, db: db, respond: respond, decorate: { [unowned self] in self.decorated($0) })
        case .write(let message, let single):
            localWrite(message, single: single, respond: respond)
        }
    }

    func completePendingWrite(opId: String, seq: Int64?, applied: [Order], errors: [WireError], pending: Bool) {
        guard let p = pendingWrites.removeValue(forKey: opId) else { return }
        if let t = p.timer { loop.cancel(t) }
        if pending {
            // Still in the outbox, to be sent again: the change is pending, not refused.
            respondPending(single: p.single, operation: p.message.operation, changes: p.localChanges, errors: p.localErrors,
                           respond: p.respond)
            return
        }
        var unchanged: [Order] = []
        if applied.isEmpty, errors.isEmpty {
            // Harmless repeats: answer with what the replica holds.
            for raw in p.message.orders {
                if let u = raw.objectValue?["uuid"]?.stringValue, let o = try? db.order(uuid: u) { unchanged.append(o) }
            }
        }
        let answer = LocalAPIRoute.writeAnswer(single: p.single, operation: p.message.operation, applied: applied,
                                               unchanged: unchanged, errors: p.localErrors + errors, seq: seq,
                                               decorate: { [unowned self] in self.decorated($0) })
        p.respond(answer.status, answer.body)
    }

    /// The link is gone before the master answered: the changes are safe in the outbox and
    /// will be sent again; answer `202 Accepted` (pending).
    func answerPendingWritesAsQueued() {
        let all = pendingWrites
        pendingWrites.removeAll()
        for p in all.values {
            if let t = p.timer { loop.cancel(t) }
            respondPending(single: p.single, operation: p.message.operation, changes: p.localChanges, errors: p.localErrors,
                           respond: p.respond)
        }
    }

    func status() -> JSONValue {
        var o = JSONObject()
        o["role"] = .string("slave")
        o["version"] = .string(NodeVersion.string)
        o["store"] = (configuration.store ?? engine.joinedStore).map { .string($0) } ?? .null
        o["name"] = .string(terminalName)
        o["terminalId"] = .string(terminalId)
        o["seq"] = .int(engine.lastSeq)
        o["masterSeq"] = .int(max(engine.masterSeq, engine.lastSeq))
        o["lag"] = .int(max(0, engine.masterSeq - engine.lastSeq))
        o["epoch"] = engine.epoch.map { .string($0) } ?? .null
        o["orders"] = .int(Int64((try? db.orderCount()) ?? 0))
        o["dataDir"] = .string(configuration.dataDirectory)
        o["avahi"] = .string(configuration.masterURL == nil ? avahiState : "not used (--master)")
        o["uptimeSeconds"] = .int(Int64(Date().timeIntervalSince(startedAt)))
        var m = JSONObject()
        m["state"] = .string(linkPhase.rawValue)
        m["url"] = (link?.url ?? target).map { .string($0.description) } ?? .null
        m["serviceName"] = targetService.map { .string($0) } ?? .null
        m["sinceSeconds"] = .int((loop.now - linkSince) / 1000)
        if let ws = link?.link { m["lastSeenMillisAgo"] = .int(loop.now - ws.lastHeardMillis) }
        m["lastError"] = lastLinkError.map { .string($0) } ?? .null
        o["master"] = .object(m)
        o["pendingWrites"] = .int(Int64(pendingWrites.count))
        o["outbox"] = .int(Int64(engine.outboxCount))
        o["mastersSeen"] = .array(services.values.sorted { $0.seen < $1.seen }.map { entry in
            let s = entry.service
            return .object(JSONObject([("name", .string(s.name)), ("address", .string("\(s.address):\(s.port)")),
                                       ("store", s.txt["store"].map { .string($0) } ?? .null)]))
        })
        return .object(o)
    }
}
