extension SlaveEngine {
    // MARK: The outbox

    /// Handles a write from the local API. `opId` is the operation id (the caller's, or one
    /// made for it); `now` is wall-clock milliseconds (the default `created` of a new order);
    /// `origin` names the caller in the rejections recorded here (default `NAME (local API)`).
    public func localWrite(
        _ original: OperationMessage, opId: String, now: Int64, origin: String? = nil
    ) -> (LocalWrite, [Action]) {
        var message = original
        message.opId = opId
        var result = LocalWrite(opId: opId, operation: message.operation)
        var out: [Action] = []
        if outboxKeys[opId] != nil {
            result.failure = .duplicateOperation
            return (result, out)
        }
        do {
            if let answer = try store.answeredOperation(opId: opId) {
                result.failure = .answered(answer)
                return (result, out)
            }
        } catch {
            result.failure = .storage("\(error)")
            return (result, out)
        }
        if message.operation == .create {
            // The order was taken now, on this terminal: its `created` must not become the time
            // the master receives it after an outage (not for a repeat of an order it has). On the
            // master's clock: this clock less its measured offset (`SlaveEngine+Clock.swift`).
            let stamp = OrderTimestamp(epochMillis: clock.mastersTime(atLocal: now)).truncatedToSeconds.storePOSText
            message.orders = message.orders.map { raw in
                guard var o = raw.objectValue, o["created"] == nil, let u = o["uuid"]?.stringValue,
                    (try? store.order(uuid: u)) == nil
                else { return raw }
                o["created"] = .string(stamp)
                return .object(o)
            }
        }
        let plan: OperationPlan
        do {
            plan = try OperationPlanner.plan(
                message, now: OrderTimestamp(epochMillis: now), lookup: { try self.store.order(uuid: $0) },
                wasRemoved: { _ in false })
        } catch {
            result.failure = .storage("\(error)")
            return (result, out)
        }
        result.unchanged = plan.unchanged
        result.errors = plan.errors
        var c = SlaveCommit()
        // Refused here, before reaching the master: recorded on this terminal.
        c.rejections = plan.errors.map {
            Rejection(
                recordedAtMillis: now, origin: origin ?? "\(terminalName) (local API)", opId: opId,
                operation: message.operation,
                orderUUID: $0.uuid, code: $0.code, message: $0.message)
        }
        guard !plan.changes.isEmpty else {
            if !c.isEmpty { try? store.commit(c) }
            return (result, out)
        }
        let refused = Set(plan.errors.compactMap(\.index))
        message.orders = message.orders.enumerated().filter { !refused.contains($0.offset) }.map(\.element)
        let keys = plan.changes.map(\.order.key)
        let entry = OutboxEntry(opId: opId, message: message.encodedBytes(), orderKeys: keys, createdMillis: now, baseSeq: lastSeq)
        c.changes = plan.changes
        c.appendOutbox = [entry]
        c.feed = [.pending(operation: message.operation, changes: plan.changes, opId: opId, origin: origin)]
        for k in keys where syncErrors[k] != nil { c.syncErrors[k] = .some(nil) }
        do {
            try store.commit(c)
        } catch {
            result.failure = .storage("could not store the change: \(error)")
            return (result, out)
        }
        result.changes = plan.changes
        outbox.append(entry)
        track(entry)
        for k in keys { syncErrors[k] = nil }
        out.append(
            .log(
                EngineLog(
                    .debug, "outbox.queued",
                    [
                        ("op.id", opId), ("op.kind", "\(message.operation)"),
                        ("orders", "\(keys.count)"), ("outbox", "\(outbox.count)"),
                    ])))
        if link == .live {
            // In outbox order: an older entry waiting to be sent again goes first.
            flushOutbox(&out, quiet: true)
            result.sent = true
            scheduleAck(&out)
        }
        return (result, out)
    }

    /// Indexes an outbox entry: its orders, and its operation parsed once for rebases.
    func track(_ e: OutboxEntry) {
        outboxKeys[e.opId] = e.orderKeys
        if case .success(.operation(let m)) = ClientMessage.decode(e.message) { outboxOperations[e.opId] = m }
        for k in e.orderKeys { pendingKeys[k, default: 0] += 1 }
    }

    /// Sends every outbox entry not yet sent on this link, in order.
    func flushOutbox(_ out: inout [Action], quiet: Bool = false) {
        guard link == .live else { return }
        var sent = 0
        for e in outbox where inFlight[e.opId] == nil {
            inFlight[e.opId] = ([], [])
            out.append(.send(e.message))
            sent += 1
        }
        if sent > 0, !quiet || sent > 1 { out.append(.log(EngineLog(.info, "outbox.sent", [("operations", "\(sent)")]))) }
    }

    /// The master's `result` for `opId`.
    func answered(opId: String, seq: Int64?, failed: Int, _ out: inout [Action]) {
        guard let heard = inFlight.removeValue(forKey: opId) else { return }
        let errors = heard.errors
        let unheard = seq == nil && failed > errors.count && outboxKeys[opId] != nil
        let limited = errors.filter { $0.code == .rateLimited }
        if seq == nil && errors.contains(where: { $0.code == .storageFailed || $0.code == .rateLimited }) || unheard {
            // The master could not commit (disk full, I/O error): nothing was applied there.
            // Or it refused orders whose refusals did not arrive on this link (an answer from
            // before). Or this terminal went over its rate limit: it waits as long as the
            // master said. The change stays in the outbox and is sent again shortly; it is
            // never dropped unanswered.
            let reason =
                unheard ? "refusals not received" : limited.isEmpty ? "the master could not store it" : "rate limited by the master"
            let retryMillis = limited.compactMap(\.retryAfterMillis).max() ?? SlaveEngine.outboxRetryMillis
            out.append(
                .log(
                    EngineLog(
                        .warning, "outbox.retry",
                        [
                            ("op.id", opId), ("reason", reason),
                            ("retry_ms", "\(retryMillis)"),
                        ])))
            if !retryScheduled {
                retryScheduled = true
                out.append(.scheduleOutboxRetry(millis: retryMillis))
            }
            out.append(.answered(opId: opId, seq: nil, applied: [], errors: errors, pending: true))
            return
        }
        if let keys = outboxKeys[opId] {
            // Still in the outbox: no fresh broadcast carried it on this link. Either nothing was
            // applied (refused, or harmless repeats), or it is a repeat of an operation applied
            // before; then the replica's copy was made locally, and goes back to the master's truth.
            let flag = seq != nil || !errors.isEmpty
            var c = SlaveCommit()
            if flag { c.needsSnapshot = true }
            settle(opId, keys: keys, seq: seq, applied: heard.applied, errors: errors, into: &c)
            do {
                try store.commit(c)
                if flag { needsSnapshot = true }
                forget(opId, keys: keys, errors: errors, &out)
            } catch {
                // The entry stays and is sent again on the next link (the master answers the
                // repeat the same way).
                out.append(.log(EngineLog(.error, "outbox.delete_failed", [("op.id", opId), ("error", "\(error)")])))
                out.append(.abort(reason: "replica write failed"))
                out.append(.answered(opId: opId, seq: nil, applied: [], errors: errors, pending: true))
                return
            }
        }
        out.append(.answered(opId: opId, seq: seq, applied: heard.applied, errors: errors, pending: false))
    }

    /// Adds to `c` what answering the outbox entry `opId` writes: its deletion, the master's
    /// refusals (recorded, and shown on the orders), and the answer, kept for a retry.
    func settle(_ opId: String, keys: [String], seq: Int64?, applied: [Order], errors: [WireError], into c: inout SlaveCommit) {
        c.deleteOutbox.append(opId)
        c.feed.append(.outcome(opId: opId, masterSeq: seq, applied: applied, errors: errors))
        c.answered.append(AnsweredOperation(opId: opId, seq: seq, applied: applied, errors: errors, answeredMillis: now))
        for e in errors {
            if let u = e.uuid { c.syncErrors[u.lowercased()] = .some(e) }
            c.rejections.append(
                Rejection(
                    recordedAtMillis: now, origin: "master", opId: opId, operation: nil, orderUUID: e.uuid,
                    code: e.code, message: e.message))
        }
    }

    /// Updates memory once a settled entry is committed.
    func forget(_ opId: String, keys: [String], errors: [WireError], _ out: inout [Action]) {
        outboxKeys[opId] = nil
        outboxOperations[opId] = nil
        outbox.removeAll { $0.opId == opId }
        if link == .live { scheduleAck(&out) }
        for k in keys {
            pendingKeys[k, default: 1] -= 1
            if pendingKeys[k] == 0 { pendingKeys[k] = nil }
        }
        for e in errors {
            if let u = e.uuid { syncErrors[u.lowercased()] = e }
            out.append(
                .log(
                    EngineLog(
                        .warning, "outbox.rejected",
                        [
                            ("op.id", opId), ("code", e.code.rawValue), ("reason", e.message),
                            ("order.uuid", e.uuid ?? "-"),
                        ])))
        }
    }

    func resyncIfSettled(_ out: inout [Action]) {
        guard needsSnapshot, inFlight.isEmpty, link == .live else { return }
        out.append(.log(EngineLog(.info, "sync.resnapshot", [("reason", "a local change was refused or answered from before")])))
        out.append(.resync(reason: "resync"))
    }
}
