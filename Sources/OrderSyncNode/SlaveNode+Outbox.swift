import Foundation
import OrderStore
import Posix
import SyncCore

/// The offline-first write path of a slave.
///
/// A local write is checked against the replica, applied to it at once (the orders show as
/// pending) and written to the durable outbox in the same transaction (`synchronous=FULL`)
/// before the API answers. Outbox entries are sent in order whenever a master is live, and leave
/// the outbox only when the master has answered for them; the master remembers operation ids,
/// so sending one again after a crash or a lost answer never applies it twice.
extension SlaveNode {
    /// Loads the outbox left by the previous run.
    func loadOutbox() throws {
        for e in try db.outboxEntries() {
            outboxKeys[e.opId] = e.orderKeys
            for k in e.orderKeys { pendingKeys[k, default: 0] += 1 }
        }
    }

    /// Handles a write from the local API.
    func localWrite(_ original: OperationMessage, single: String?, respond: @escaping LocalAPIServer.Respond) {
        var message = original
        let opId = message.opId ?? UUID().uuidString.lowercased()
        message.opId = opId
        if message.operation == .create {
            // The order was taken now, on this terminal: its `created` must not become the time
            // the master receives it after an outage.
            let now = MasterLedger.now().truncatedToSeconds.storePOSText
            message.orders = message.orders.map { raw in
                // (Not for a repeat of an order this terminal already has: that stays a harmless repeat.)
                guard var o = raw.objectValue, o["created"] == nil,
                      let u = o["uuid"]?.stringValue, (try? db.order(uuid: u)) == nil else { return raw }
                o["created"] = .string(now)
                return .object(o)
            }
        }
        if outboxKeys[opId] != nil {
            respond(409, LocalAPIRoute.errorBody(code: "already_exists", message: "operation \(opId) is already waiting in the outbox"))
            return
        }
        let plan: OperationPlan
        do {
            plan = try OperationPlanner.plan(message, now: MasterLedger.now(), lookup: { try db.order(uuid: $0) },
                                             wasRemoved: { _ in false })
        } catch {
            respond(500, LocalAPIRoute.errorBody(code: "storage_failed", message: "\(error)"))
            return
        }
        for e in plan.errors {
            // Refused here, before reaching the master: recorded on this terminal
            // (`ordersync journal --rejected` on the slave's data directory).
            _ = try? db.appendRejection(Rejection(recordedAtMillis: MasterLedger.now().epochMillis,
                                                  origin: "\(terminalName) (local API)", opId: opId, operation: message.operation,
                                                  orderUUID: e.uuid, code: e.code, message: e.message))
        }
        guard !plan.changes.isEmpty else {
            // Nothing to change here: invalid orders, or repeats of what the replica holds.
            let answer = LocalAPIRoute.writeAnswer(single: single, operation: message.operation, applied: [],
                                                   unchanged: plan.unchanged, errors: plan.errors, seq: nil)
            respond(answer.status, answer.body)
            return
        }
        // Orders refused here are answered now and not sent.
        let refused = Set(plan.errors.compactMap(\.index))
        message.orders = message.orders.enumerated().filter { !refused.contains($0.offset) }.map(\.element)
        let keys = plan.changes.map(\.order.key)
        let text = message.encoded()
        do {
            try db.transaction {
                try applyLocally(plan.changes)
                try db.appendOutbox(OutboxEntry(opId: opId, message: text, orderKeys: keys,
                                                createdMillis: MasterLedger.now().epochMillis))
            }
        } catch {
            respond(500, LocalAPIRoute.errorBody(code: "storage_failed", message: "could not store the change: \(error)"))
            return
        }
        outboxKeys[opId] = keys
        for k in keys {
            pendingKeys[k, default: 0] += 1
            localRejections[k] = nil
        }
        logger.debug("outbox.queued", metadata: ["op.id": "\(opId)", "op.kind": "\(message.operation)", "orders": "\(keys.count)",
                                                 "outbox": "\(outboxKeys.count)"])
        guard linkPhase == .live, let l = link else {
            respondPending(single: single, operation: message.operation, changes: plan.changes, errors: plan.errors, respond: respond)
            return
        }
        var pending = PendingWrite(message: message, single: single, respond: respond)
        pending.localChanges = plan.changes
        pending.localErrors = plan.errors
        pending.timer = loop.schedule(after: NodeDefaults.forwardTimeoutMillis) { [weak self] in
            // The master is slow: the change is safe in the outbox; say so now.
            guard let self = self, let p = self.pendingWrites.removeValue(forKey: opId) else { return }
            self.respondPending(single: p.single, operation: p.message.operation, changes: p.localChanges, errors: p.localErrors,
                                respond: p.respond)
        }
        pendingWrites[opId] = pending
        inFlight.insert(opId)
        l.send(text)
    }

    /// `202 Accepted`: stored on this terminal, waiting for the master.
    func respondPending(single: String?, operation: OperationKind, changes: [OrderChange], errors: [WireError],
                        respond: LocalAPIServer.Respond) {
        if single != nil, let e = errors.first {
            respond(LocalAPIRoute.httpStatus(for: e.code), LocalAPIRoute.errorBody(code: e.code.rawValue, message: e.message, uuid: e.uuid))
            return
        }
        let orders = changes.map { decorated($0.order) }
        if single != nil, let o = orders.last {
            respond(202, .object(o))
            return
        }
        var body = JSONObject()
        body["seq"] = .null
        body["pending"] = .array(orders.map { .object($0) })
        body["applied"] = .array([])
        body["unchanged"] = .array([])
        body["errors"] = LocalAPIRoute.writeAnswer(single: nil, operation: operation, applied: [], unchanged: [], errors: errors,
                                                   seq: nil).body.objectValue?["errors"] ?? .array([])
        respond(202, .object(body))
    }

    /// Applies planned changes to the replica (inside the caller's transaction).
    func applyLocally(_ changes: [OrderChange]) throws {
        for change in changes {
            switch change {
            case .insert(let o), .update(let o):
                try db.upsertOrder(o)
            case .delete(let o):
                if try db.order(uuid: o.uuid) != nil { try db.deleteOrder(uuid: o.uuid) }
            }
        }
    }

    /// Re-applies what is still in the outbox on top of the master's state (after a snapshot or
    /// a catch-up), so the terminal keeps reading its own writes.
    func reapplyOutbox() {
        do {
            let entries = try db.outboxEntries()
            guard !entries.isEmpty else { return }
            try db.transaction {
                for e in entries {
                    guard case .success(.operation(let m)) = ClientMessage.decode(e.message) else { continue }
                    let plan = try OperationPlanner.plan(m, now: MasterLedger.now(), lookup: { try db.order(uuid: $0) },
                                                         wasRemoved: { _ in false })
                    try applyLocally(plan.changes)
                }
            }
        } catch {
            logger.error("outbox.reapply_failed", metadata: ["error": "\(error)"])
        }
    }

    /// Sends every outbox entry not yet sent on this link, in order.
    func flushOutbox() {
        guard linkPhase == .live, let l = link else { return }
        do {
            let entries = try db.outboxEntries().filter { !inFlight.contains($0.opId) }
            for e in entries {
                inFlight.insert(e.opId)
                l.send(e.message)
            }
            if !entries.isEmpty {
                logger.info("outbox.sent", metadata: ["operations": "\(entries.count)"])
            }
        } catch {
            logger.error("outbox.read_failed", metadata: ["error": "\(error)"])
        }
    }

    /// The master answered for `opId` (its `result`): the entry leaves the outbox. Rejections
    /// are recorded, and the replica goes back to the master's truth with a fresh snapshot.
    func outboxAnswered(opId: String, errors: [WireError]) {
        guard outboxKeys[opId] != nil else { return }
        inFlight.remove(opId)
        if errors.contains(where: { $0.code == .storageFailed }) {
            // The master could not commit (disk full, I/O error): nothing was applied there.
            // The change stays in the outbox and is sent again shortly; it is never dropped.
            logger.warning("outbox.retry", metadata: ["op.id": "\(opId)", "reason": "the master could not store it", "retry_ms": "5000"])
            if retryFlushTimer == nil {
                retryFlushTimer = loop.schedule(after: 5000) { [weak self] in
                    self?.retryFlushTimer = nil
                    self?.flushOutbox()
                }
            }
            return
        }
        guard let keys = outboxKeys.removeValue(forKey: opId) else { return }
        do { try db.deleteOutbox(opId: opId) } catch {
            logger.error("outbox.delete_failed", metadata: ["op.id": "\(opId)", "error": "\(error)"])
        }
        for k in keys {
            pendingKeys[k, default: 1] -= 1
            if pendingKeys[k] == 0 { pendingKeys[k] = nil }
        }
        guard !errors.isEmpty else { return }
        for e in errors {
            if let u = e.uuid { localRejections[u.lowercased()] = e }
            _ = try? db.appendRejection(Rejection(recordedAtMillis: MasterLedger.now().epochMillis, origin: "master",
                                                  opId: opId, operation: nil, orderUUID: e.uuid, code: e.code, message: e.message))
            logger.warning("outbox.rejected", metadata: ["op.id": "\(opId)", "code": "\(e.code.rawValue)", "reason": "\(e.message)",
                                                         "order.uuid": "\(e.uuid ?? "-")"])
        }
        // What this terminal showed for those orders was not the master's truth: take a fresh
        // snapshot once nothing else is in flight (the caller checks after answering).
        needsSnapshot = true
    }

    func resyncIfSettled() {
        guard needsSnapshot, inFlight.isEmpty, linkPhase == .live, let l = link else { return }
        logger.info("sync.resnapshot", metadata: ["reason": "a local change was rejected"])
        l.close(code: .normal, reason: "resync")
    }

    /// An order as the local API shows it on a slave: with its sync state.
    func decorated(_ order: Order) -> JSONObject {
        var o = order.json
        if pendingKeys[order.key] != nil {
            o["sync"] = .string("pending")
        } else if let e = localRejections[order.key] {
            o["sync"] = .string("rejected")
            o["syncError"] = .object(JSONObject([("code", .string(e.code.rawValue)), ("message", .string(e.message))]))
        } else {
            o["sync"] = .string("synced")
        }
        return o
    }
}
