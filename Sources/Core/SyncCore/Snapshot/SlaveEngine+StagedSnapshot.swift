/// A snapshot received by a slave whose store stages it (`SnapshotStagingStore`, Docs/PROTOCOL.md
/// 4.2.2): each part is staged as it arrives, in the commit of the messages of its loop turn;
/// the last part switches the replica to the staged orders in one commit with everything a
/// snapshot brings (position, epoch, the standby journal's new base, the operation ids, the
/// term starts, the outbox entries it answers, the pending local changes on top).
extension SlaveEngine {
    /// Whether applying `message` can write nothing but staged snapshot rows: a snapshot part
    /// other than its snapshot's last, on a store that stages. Its batch may commit without a
    /// sync (the node's choice): nothing in it is acknowledged, what is staged counts only once
    /// the last part's commit (synced) switches to it, and a restart never resumes from it (a
    /// new link's first part starts the staging anew; the store drops it when opened).
    public func onlyStages(_ message: DecodedMasterMessage) -> Bool {
        guard store is any SnapshotStagingStore, collecting == nil, message.reading.standby == nil,
            case .success(.applied(_, _, _, _, _, let snap?, _)) = message.reading.message
        else { return false }
        return snap.part < snap.parts
    }

    /// Stages `snap`'s orders; on its last part, switches.
    func stagedSnapshotPart(_ snap: SnapshotPart, _ orders: [Order], into staging: any SnapshotStagingStore, _ out: inout [Action]) {
        let step = stagedReceipt.part(snap, orders: orders.count)
        let first: Bool
        switch step {
        case .unexpected(let reason):
            // The old replica stays; the next link asks again (a snapshot or a catch-up).
            out.append(.log(EngineLog(.warning, "snapshot.part_unexpected", [("reason", reason), ("action", "resync")])))
            out.append(.resync(reason: "snapshot part out of order"))
            return
        case .stage(let f), .last(let f, _, _):
            first = f
        }
        do {
            try staging.stageSnapshot(orders, first: first)
        } catch {
            stagedReceipt.interrupted()
            out.append(.log(EngineLog(.error, "replica.write_failed", [("error", "\(error)")])))
            out.append(.abort(reason: "replica write failed"))
            return
        }
        guard case .last(_, let count, let applied) = step else { return }
        switchToStaged(snap, orders: count, applied: applied, staging, &out)
    }

    /// The last part is staged: one commit makes the staged snapshot the replica.
    private func switchToStaged(
        _ snap: SnapshotPart, orders count: Int, applied: [String: Int64], _ staging: any SnapshotStagingStore,
        _ out: inout [Action]
    ) {
        let held = applied.filter { outboxKeys[$0.key] != nil && $0.value <= snap.seq }
        do {
            var c = SlaveCommit()
            c.feed.append(.snapshot(masterSeq: snap.seq, epoch: snap.epoch, orders: count))
            // Outbox entries the master already applied are in the snapshot: answered, they
            // leave the outbox in this commit and are not applied again on top.
            var settledHere: [(opId: String, keys: [String], seq: Int64?)] = []
            for e in outbox where held[e.opId] != nil {
                // Its orders as the snapshot holds them (the answer a retry of it gets).
                let orders = try e.orderKeys.compactMap { try staging.stagedOrder(uuid: $0) }
                settle(e.opId, keys: e.orderKeys, seq: held[e.opId], applied: orders, errors: [], into: &c)
                settledHere.append((e.opId, e.orderKeys, held[e.opId]))
            }
            // Pending local changes go on top of the staged orders, in the same commit.
            var overlay: [String: Order?] = [:]
            try rebase(&overlay, keys: nil, fallBackToStore: false, skipping: Set(held.keys)) { try staging.stagedOrder(uuid: $0) }
            c.changes = overlay.keys.sorted().map { key in
                if let o = overlay[key] ?? nil { return .update(o) }
                return .delete(Order(uuid: key, customerName: "", created: OrderTimestamp(epochMillis: 0)))
            }
            c.replaceAllWithStaged = true
            try commitSnapshot(&c, snap, orders: count, settled: settledHere, &out)
        } catch {
            out.append(.log(EngineLog(.error, "replica.write_failed", [("error", "\(error)")])))
            out.append(.abort(reason: "replica write failed"))
        }
    }

    /// A snapshot's commit `c` (its orders, the outbox entries it answers), completed with what
    /// every snapshot brings (position, epoch, store, the standby journal's base, what it keeps
    /// through the snapshot, term starts), committed; then the engine follows it.
    func commitSnapshot(
        _ c: inout SlaveCommit, _ snap: SnapshotPart, orders count: Int, settled: [(opId: String, keys: [String], seq: Int64?)],
        _ out: inout [Action]
    ) throws {
        c.lastSeq = snap.seq
        c.epoch = snap.epoch
        c.needsSnapshot = false
        if let s = configuredStore { c.store = s }
        snapshotTerms(snap, into: &c)
        keepThroughSnapshot(snap, settled: settled, into: &c)
        try store.commit(c)
        adoptTerms(of: c)
        lastSeq = snap.seq
        epoch = snap.epoch
        if let s = configuredStore { joinedStore = s }
        needsSnapshot = false
        masterSeq = max(masterSeq, snap.seq)
        for st in settled { forget(st.opId, keys: st.keys, errors: [], &out) }
        out.append(.log(EngineLog(.info, "snapshot.received", [("orders", "\(count)"), ("seq", "\(snap.seq)")])))
        // Acked as soon as the commit is on disk (the node sends the actions then), before the
        // master's `ready`, which waited behind it: `held` at the snapshot's seq tells the master
        // the copy switched, and the writes it holds from now on are waited for again (7.8).
        out.append(.send(ackMessage()))
    }
}
