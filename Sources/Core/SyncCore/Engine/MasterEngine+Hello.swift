/// A terminal's hello: who it is, what it holds, and whether it gets the journal since its
/// sequence (catch-up) or a snapshot.
extension MasterEngine {
    func hello(_ hello: HelloMessage, from id: Int, now: Int64, _ out: inout [Action]) {
        guard peers[id]?.phase == .awaitingHello else {
            reject(
                WireError(.invalidMessage, "hello is only accepted once, as the first message"), opId: nil, operation: nil,
                to: id, now: now, &out)
            return
        }
        if let proto = hello.proto, proto != orderSyncProtocolName {
            reject(
                WireError(.invalidMessage, "this master speaks \(orderSyncProtocolName), not \(proto)"), opId: nil,
                operation: nil, to: id, now: now, &out)
            out.append(.close(peer: id, code: MasterEngine.policyViolation, reason: "unsupported protocol version"))
            return
        }
        if let wanted = hello.store, wanted != storeId {
            reject(
                WireError(.wrongStore, "this master serves store '\(storeId)', not '\(wanted)'"), opId: nil, operation: nil,
                to: id, now: now, &out)
            out.append(.close(peer: id, code: MasterEngine.policyViolation, reason: "wrong store"))
            return
        }
        guard let terminal = peers[id]?.authenticated else {
            reject(
                WireError(.invalidMessage, "hello is for OrderSync slaves on a secure link"), opId: nil, operation: nil, to: id,
                now: now, &out)
            return
        }
        // Only a paired terminal's word can end this master's reign.
        if refusesStaleHello(hello, from: id, &out) { return }
        // Who it is was proved by its key: the id and name in the hello are its own say only.
        if hello.terminalId != terminal.nodeId || hello.terminalName != terminal.name {
            out.append(
                .log(
                    EngineLog(
                        .debug, "peer.hello_mismatch",
                        [
                            ("peer.address", peers[id]?.address ?? "?"), ("terminal", terminal.name), ("terminal.id", terminal.nodeId),
                            ("hello.terminal", hello.terminalName), ("hello.terminal_id", hello.terminalId),
                        ])))
        }
        // A hello that can only be answered with a snapshot, over the limit: refused before any
        // write, so a reconnect loop costs the store nothing.
        if Self.needsSnapshot(hello, epoch: epoch, lastSeq: lastSeq, maxCatchUp: maxCatchUpEntries),
            !admitSnapshot(for: id, now: now, take: false, &out)
        {
            return
        }
        // Its ack follows the catch-up; the position in the hello is not an ack (the slave may
        // still hold operations the master applied, see `SlaveEngine.ackSeq`). Until then it
        // stands where it was last acknowledged.
        if let saved = try? store.knownTerminals().first(where: { $0.id == terminal.nodeId }) {
            peers[id]?.ackedSeq = min(saved.ackedSeq, lastSeq)
            peers[id]?.outbox = saved.outbox
        }
        if let n = hello.outbox { peers[id]?.outbox = n }
        if let p = peers[id] { remember([p], now: now, &out) }
        out.append(
            .log(
                EngineLog(
                    .info, "peer.hello",
                    [
                        ("peer.address", peers[id]?.address ?? "?"), ("terminal", terminal.name),
                        ("terminal.id", terminal.nodeId), ("peer.last_seq", "\(hello.lastSeq)"),
                        ("peer.outbox", hello.outbox.map { "\($0)" } ?? "-"),
                    ])))
        // Entries of another term: dropped by the slave, which then takes the snapshot.
        let diverged = divergence(of: hello)
        do {
            if diverged == nil, let missed = try catchUp(from: hello.lastSeq, epoch: hello.epoch, peer: id, &out) {
                // Resumable catch-up: exactly the operations it missed, then "ready".
                peers[id]?.copyFloor = hello.lastSeq
                for m in missed { out.append(.send(peer: id, bytes: m)) }
                out.append(.send(peer: id, bytes: terms.readyBytes(seq: lastSeq, epoch: epoch, store: storeId)))
                sendMembers(to: id, &out)
                out.append(
                    .log(
                        EngineLog(
                            .info, "catchup.sent",
                            [
                                ("peer.address", peers[id]?.address ?? "?"),
                                ("from_seq", "\(hello.lastSeq)"), ("operations", "\(lastSeq - hello.lastSeq)"),
                                ("messages", "\(missed.count)"), ("seq", "\(lastSeq)"),
                            ])))
                peers[id]?.phase = .live
                return
            }
        } catch {
            out.append(.log(EngineLog(.error, "catchup.failed", [("error", "\(error)")])))
        }
        // A snapshot is the master's costliest answer: a reconnect loop gets `rate_limited`.
        guard admitSnapshot(for: id, now: now, take: true, &out) else { return }
        // Which of its waiting operations the snapshot already holds: it must not apply them
        // again on top (a snapshot's orders carry no operation ids).
        var applied: [String: Int64] = [:]
        for opId in hello.pending {
            if let seq = appliedSeq(opId: opId) { applied[opId] = seq }
        }
        // `diverged` goes first, before the first part: a paced snapshot would otherwise hold it
        // (`route`) until its end, and the slave would drop its entries after applying it. The
        // operation ids the snapshot covers follow it (kept with the snapshot, 7.2).
        let lead =
            (diverged.map { [divergedMessage(keep: $0, to: id, lastSeq: hello.lastSeq, &out)] } ?? [])
            + appliedIdsMessages(to: id, &out)
        sendSnapshot(to: id, applied: applied, lead: lead, &out)
    }

    /// The broadcasts a terminal that applied everything up to `from` of `peerEpoch` has
    /// missed, in order (a broadcast larger than `broadcastPartBytes` in its parts); nil when the
    /// journal cannot bring it up to date (another epoch, a sequence from the future, entries
    /// compacted away, too far behind, or more than `maxCatchUpBytes` to send): it needs a
    /// snapshot.
    public func catchUp(from seq: Int64, epoch peerEpoch: String?) throws -> [[UInt8]]? {
        var ignored: [Action] = []
        return try catchUp(from: seq, epoch: peerEpoch, peer: nil, &ignored)
    }

    /// `catchUp(from:epoch:)` for the terminal `peer`, noting in `out` a catch-up over its byte
    /// budget (`catchup.over_budget`: it gets the paced snapshot instead).
    func catchUp(from seq: Int64, epoch peerEpoch: String?, peer: Int?, _ out: inout [Action]) throws -> [[UInt8]]? {
        guard let e = peerEpoch, e == epoch, seq >= 0, seq <= lastSeq else { return nil }
        if seq == lastSeq { return [] }
        guard lastSeq - seq <= Int64(maxCatchUpEntries), let first = try store.firstJournalSeq(), first <= seq + 1 else {
            return nil
        }
        let entries = try store.journal(since: seq, limit: maxCatchUpEntries)
        // Gapless by construction (sequence numbers are assigned in the commit's transaction).
        guard entries.first?.seq == seq + 1, entries.last?.seq == lastSeq, entries.count == Int(lastSeq - seq) else { return nil }
        // Sent at once, the entries must fit the link's send buffer: a catch-up that cannot is
        // replaced by the snapshot, which goes out a part at a time as the link drains.
        let bytes = entries.reduce(0) { $0 + $1.message.count }
        guard bytes <= maxCatchUpBytes else {
            out.append(
                .log(
                    EngineLog(
                        .info, "catchup.over_budget",
                        [
                            ("peer.address", peer.flatMap { peers[$0]?.address } ?? "?"), ("from_seq", "\(seq)"),
                            ("operations", "\(entries.count)"), ("bytes", "\(bytes)"), ("budget", "\(maxCatchUpBytes)"),
                        ])))
            return nil
        }
        var messages: [[UInt8]] = []
        for entry in entries {
            let parts = BroadcastParts.messages(of: entry.message, partBytes: broadcastPartBytes)
            if parts.count > 1 { logParts(seq: entry.seq, bytes: entry.message.count, parts: parts.count, &out) }
            messages += parts
        }
        return messages
    }
}
