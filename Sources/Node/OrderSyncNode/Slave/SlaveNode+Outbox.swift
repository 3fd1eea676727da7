import EventLoopIO
import Foundation
import JSON
import NodePolicy
import OrderStore
import SyncCore

/// The offline-first write path of a slave.
///
/// A local write is checked against the replica, applied to it at once (the orders show as
/// pending) and written to the durable outbox in the same transaction (`synchronous=FULL`)
/// before the API answers (the `SlaveEngine` decides; this shell answers HTTP). Outbox entries
/// are sent in order whenever a master is live, and leave the outbox only when the master has
/// answered for them; the master remembers operation ids, so sending one again after a crash or
/// a lost answer never applies it twice.
extension SlaveNode {
    /// Handles a write from the local API.
    func localWrite(_ message: OperationMessage, single: String?, respond: LocalAPIServer.Respond) {
        // An operation id the caller chose, answered before: that answer again, byte for byte.
        if single == nil, let id = message.opId, let first = try? writer.read({ try $0.keptAPIAnswer(opId: id) }) {
            respond.send(first.status, first.body)
            return
        }
        let opId = message.opId ?? UUID().uuidString.lowercased()
        let origin = respond.caller.origin(node: terminalName)
        do {
            try writer.openGroup()
        } catch {
            // No transaction to group in: the write commits alone, as it comes.
            let (write, actions) = engine.localWrite(message, opId: opId, now: WallClock.nowMillis(), origin: origin)
            answerLocalWrite(write, actions, message: message, opId: opId, single: single, respond: respond)
            return
        }
        // Applied in a group of its own, committed off the loop; answered (and sent to the
        // master) only once it is on disk.
        let (write, actions) = writer.collect { _ in
            engine.localWrite(message, opId: opId, now: WallClock.nowMillis(), origin: origin)
        }
        writer.commit { [weak self] result in
            guard let self else { return }
            switch result {
            case .success:
                self.answerLocalWrite(write, actions, message: message, opId: opId, single: single, respond: respond)
            case .failure(let error):
                // Nothing of it is on disk, and nothing was sent: refused as a store failure.
                respond(500, LocalAPIRoute.errorBody(code: "storage_failed", message: "\(error)"))
                self.replicaRolledBack()
            }
        }
    }

    /// Answers a local write the engine applied (and that is on disk), and carries out what it
    /// asked for (the outbox entry sent to the master).
    private func answerLocalWrite(
        _ write: SlaveEngine.LocalWrite, _ actions: [SlaveEngine.Action], message: OperationMessage, opId: String,
        single: String?, respond: LocalAPIServer.Respond
    ) {
        defer { changeFeed?.wake() }
        switch write.failure {
        case .duplicateOperation?:
            respond(409, LocalAPIRoute.errorBody(code: "already_exists", message: "operation \(opId) is already waiting in the outbox"))
            return
        case .answered(let first)?:
            // A retry of an operation the master answered before: that answer, nothing applied.
            let answer = LocalAPIRoute.writeAnswer(
                single: single, operation: message.operation, applied: first.applied,
                unchanged: [], errors: first.errors, seq: first.seq)
            respond(answer.status, answer.body)
            return
        case .storage(let reason)?:
            respond(500, LocalAPIRoute.errorBody(code: "storage_failed", message: reason))
            return
        case nil:
            break
        }
        guard !write.changes.isEmpty else {
            // Nothing to change here: invalid orders, or repeats of what the replica holds.
            let answer = LocalAPIRoute.writeAnswer(
                single: single, operation: message.operation, applied: [],
                unchanged: write.unchanged, errors: write.errors, seq: nil)
            keepAnswer(answer, to: message, single: single, respond: respond)
            perform(actions)
            return
        }
        guard write.sent else {
            respondPending(single: single, operation: message.operation, changes: write.changes, errors: write.errors, respond: respond)
            perform(actions)
            return
        }
        var pending = PendingWrite(message: message, single: single, respond: respond)
        pending.localChanges = write.changes
        pending.localErrors = write.errors
        pending.timer = loop.schedule(after: NodeDefaults.forwardTimeout) { [weak self] in
            // The master is slow: the change is safe in the outbox; say so now.
            guard let self = self, let p = self.pendingWrites.removeValue(forKey: opId) else { return }
            self.respondPending(
                single: p.single, operation: p.message.operation, changes: p.localChanges, errors: p.localErrors,
                respond: p.respond)
        }
        pendingWrites[opId] = pending
        perform(actions)
    }

    /// Answers with the final answer to an operation; one sent with the caller's own `opId` is
    /// kept first, for a repeat (as the bytes sent), and answered once that is on disk.
    func keepAnswer(
        _ answer: (status: Int, body: JSONValue), to message: OperationMessage, single: String?, respond: LocalAPIServer.Respond
    ) {
        let status = answer.status
        let body = answer.body.serializedBytes()
        guard single == nil, let id = message.opId else {
            respond.send(status, body)
            return
        }
        // A group of its own, committed off the loop (after the batch committing now, if one
        // is). Should it fail, the answer still goes; a repeat is then answered from the
        // master's answer kept with the outbox.
        let now = WallClock.nowMillis()
        writer.write({ try $0.saveAPIAnswer(opId: id, status: status, body: body, atMillis: now) }) { _ in
            respond.send(status, body)
        }
    }

    /// `202 Accepted`: stored on this terminal, waiting for the master.
    func respondPending(
        single: String?, operation: OperationKind, changes: [OrderChange], errors: [WireError],
        respond: LocalAPIServer.Respond
    ) {
        if single != nil, let e = errors.first {
            respond(
                LocalAPIRoute.httpStatus(for: e.code),
                LocalAPIRoute.errorBody(code: e.code.rawValue, message: e.message, uuid: e.uuid, current: e.current))
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
        body["errors"] =
            LocalAPIRoute.writeAnswer(
                single: nil, operation: operation, applied: [], unchanged: [], errors: errors,
                seq: nil
            ).body.objectValue?["errors"] ?? .array([])
        respond(202, .object(body))
    }

    /// An order as the local API shows it on a slave: with its sync state.
    func decorated(_ order: Order) -> JSONObject {
        Self.decorated(order, states: engine.syncStates)
    }

    /// An order as the local API shows it on a slave, with its state in `states` (taken on the
    /// loop; a page is encoded off it).
    static func decorated(_ order: Order, states: SlaveEngine.SyncStates) -> JSONObject {
        var o = order.json
        switch states.of(order.key) {
        case .pending:
            o["sync"] = .string("pending")
        case .rejected(let e):
            o["sync"] = .string("rejected")
            o["syncError"] = .object(JSONObject([("code", .string(e.code.rawValue)), ("message", .string(e.message))]))
        case .synced:
            o["sync"] = .string("synced")
        }
        return o
    }
}
