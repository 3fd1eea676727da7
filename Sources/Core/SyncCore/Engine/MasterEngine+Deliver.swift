/// Answering the sender of an operation and broadcasting it to the terminals.
extension MasterEngine {
    /// Answers the sender (refusals first, each followed on a StorePOS app by what puts it
    /// right, so they precede the broadcast carrying the operation id; then `result`) and broadcasts an applied operation to every live terminal.
    func deliver(
        _ outcome: ApplyOutcome, message: OperationMessage, origin: String, sender: Int?, now: Int64,
        _ out: inout [Action]
    ) {
        if let s = sender {
            for e in outcome.errors {
                reject(e, opId: message.opId, operation: message.operation, to: s, now: now, &out)
                sendPutRight(e, of: message, to: s, &out)
                noteForeignOrder(e, of: message, from: s, now: now, &out)
            }
            for e in outcome.repeatedErrors {
                out.append(.send(peer: s, bytes: ServerMessage.error(e, opId: message.opId, operation: message.operation).encodedBytes()))
            }
        } else {
            for e in outcome.errors {
                out.append(
                    .log(EngineLog(e.logLevel, "message.rejected", [("origin", origin), ("code", e.code.rawValue), ("reason", e.message)])))
                record(e, origin: origin, opId: message.opId, operation: message.operation, now: now, &out)
            }
        }
        sendRefused(outcome, opId: message.opId, origin: origin, sender: sender, &out)
        if let text = outcome.broadcast, !outcome.isRepeat {
            if recordsGroup {
                groupApplied.append(
                    GroupedOperation(
                        seq: outcome.seq ?? 0, sender: sender, origin: origin, opId: message.opId, operation: message.operation,
                        orderUUIDs: outcome.applied.map(\.uuid)))
            }
            if logsEachOperation {
                out.append(
                    .log(
                        EngineLog(
                            .debug, "op.applied",
                            [
                                ("op.seq", "\(outcome.seq ?? 0)"), ("op.kind", "\(message.operation)"),
                                ("orders", "\(outcome.applied.count)"), ("origin", origin), ("op.id", message.opId ?? ""),
                            ])))
            }
            if message.operation == .create { noteCreatedDuringSnapshots(outcome.applied.map(\.key)) }
            let seq = outcome.seq ?? 0
            var texts = [text]
            if text.count > broadcastPartBytes {
                // Cut from the journalled bytes: every part carries the broadcast's members (its term too).
                texts = BroadcastParts.messages(of: text, partBytes: broadcastPartBytes)
                logParts(seq: seq, bytes: text.count, parts: texts.count, &out)
            }
            let (to, storePOS) = recipients(of: message.operation, from: sender)
            if message.operation == .create { removeHeldCopies(of: outcome.applied, before: to, now: now, &out) }
            // Only StorePOS terminals are spaced: an access to each slave's `Peer` here cost about
            // 1,000 instructions per paired delivery for nothing (Docs/PERFORMANCE.md).
            if !storePOS.isEmpty {
                spaceForStorePOS(
                    storePOS, naming: outcome.applied.map(\.uuid),
                    promises: StorePOSSpacing.promises(of: message.operation, orders: outcome.applied.count), &out)
            }
            for part in texts { out.append(.broadcast(bytes: part, peers: to)) }
        } else if outcome.isRepeat, let s = sender, peers[s]?.speaksOrderSync == true {
            // A retry of an operation already answered: the original answer, to the sender only.
            out.append(
                .log(EngineLog(.info, "op.repeat", [("op.id", message.opId ?? ""), ("op.seq", "\(outcome.seq ?? 0)"), ("origin", origin)])))
            if let text = outcome.broadcast {
                for part in BroadcastParts.messages(of: text, partBytes: broadcastPartBytes) { out.append(.send(peer: s, bytes: part)) }
            }
        }
        if let s = sender, let id = message.opId, peers[s]?.speaksOrderSync == true {
            out.append(
                .send(
                    peer: s,
                    bytes: ServerMessage.result(
                        opId: id, seq: outcome.seq, applied: outcome.applied.count,
                        unchanged: outcome.unchanged.count,
                        failed: outcome.errors.count + outcome.repeatedErrors.count
                    ).encodedBytes()))
        }
        if let s = sender, peers[s]?.speaksOrderSync == true, outcome.errors.contains(where: { $0.code == .storageFailed }) {
            // Operations after this one on the link may depend on it: none may overtake it. The
            // link ends here; the slave sends its outbox again, in order, when it reconnects.
            peers[s]?.phase = .closing
            out.append(.close(peer: s, code: MasterEngine.internalError, reason: "the master could not store an operation"))
        }
    }

    /// Before a message naming `uuids` (giving a StorePOS app `promises` promises), the empty
    /// Removes each StorePOS terminal among `ids` needs so that its app cannot apply it before
    /// an earlier message about the same orders (`StorePOSSpacing`).
    func spaceForStorePOS(_ ids: [Int], naming uuids: [String], promises: Int, _ out: inout [Action]) {
        let keys = StorePOSSpacing.keys(naming: uuids)
        for id in ids {
            // Changed where it lies (`values[i]`), not through the subscript's optional, which
            // moved each terminal's spacing out of the table and back with a retain and release.
            guard let i = storePOSSpacing.index(forKey: id) else { continue }
            let fences = storePOSSpacing.values[i].fencesBefore(keys: keys, promises: promises)
            for _ in 0..<fences { out.append(.send(peer: id, bytes: StorePOSSpacing.fenceMessage)) }
        }
    }

    /// Notes a broadcast sent in parts (`broadcast.parts`, info: rare, and worth seeing).
    func logParts(seq: Int64, bytes: Int, parts: Int, _ out: inout [Action]) {
        out.append(
            .log(EngineLog(.info, "broadcast.parts", [("op.seq", "\(seq)"), ("bytes", "\(bytes)"), ("parts", "\(parts)")])))
    }

    /// Who gets the broadcast of an operation from `sender`: every live terminal, and every one
    /// whose snapshot is going out (`route` holds it for them). An OrderSync slave gets its own
    /// (its acknowledgement); a plain StorePOS terminal does not, since it applied the operation
    /// before sending it and its app appends every Create it receives. The exception: an Update
    /// or Remove it sent while its own snapshot goes out is held for it, because the snapshot's
    /// Creates were read before the change and would undo it on the app (both apply harmlessly
    /// again there).
    /// Also returns which of them are StorePOS terminals (the ones `spaceForStorePOS` spaces), in
    /// the same order.
    func recipients(of operation: OperationKind, from sender: Int?) -> (all: [Int], storePOS: [Int]) {
        func receives(_ p: Peer) -> Bool {
            guard p.phase == .live || snapshots[p.id] != nil else { return false }
            // Orders brought in from StorePOS apps: those apps get the store afresh instead.
            guard p.speaksOrderSync || !withholdsFromStorePOS else { return false }
            guard p.id == sender, !p.speaksOrderSync else { return true }
            return snapshots[p.id] != nil && operation != .create
        }
        // Each terminal read in place: filtering `peers.values` copied every `Peer` (its strings,
        // its spacing map) for every operation.
        let all = peers.values
        var ids: [Int] = []
        var storePOS: [Int] = []
        ids.reserveCapacity(all.count)
        for i in all.indices where receives(all[i]) {
            ids.append(all[i].id)
            if !all[i].speaksOrderSync { storePOS.append(all[i].id) }
        }
        return (ids.sorted(), storePOS.sorted())
    }

    /// Persists what the master knows of these terminals.
    func remember(_ list: [Peer], now: Int64, _ out: inout [Action]) {
        let terminals = list.compactMap { p in
            p.terminalId.map {
                KnownTerminal(
                    id: $0, name: p.terminalName ?? $0, address: p.address, ackedSeq: p.ackedSeq ?? 0,
                    lastSeenMillis: now, outbox: p.outbox)
            }
        }
        guard !terminals.isEmpty else { return }
        do {
            try store.saveTerminals(terminals)
        } catch {
            out.append(.log(EngineLog(.error, "terminal.save_failed", [("error", "\(error)")])))
        }
    }
}
