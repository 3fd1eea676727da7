/// The slave's sync logic, with no I/O: the master's messages and local writes in, messages and
/// answers out. The node carries out the actions on its WebSocket link and timers; the
/// simulation does the same with an in-memory network and store.
///
/// The replica applies the master's numbered operations strictly in order and stores the last
/// sequence in the same transaction. A local change is applied to the replica and appended to
/// the outbox in one transaction before it is answered; outbox entries are sent in order while
/// the link is live and leave the outbox when the master has answered for them (its broadcast
/// carrying the operation id, applied in the same transaction, or its `result`). Whatever the
/// master sends is applied with the outbox's pending changes re-applied on top, so the terminal
/// keeps reading its own writes until the master has answered for them.
public final class SlaveEngine {
    /// How long to wait before sending again an operation the master could not store.
    public static let outboxRetryMillis: Int64 = 5000

    public let store: any SlaveStore
    public let terminalId: String
    public let terminalName: String
    /// Whether each of this terminal's own operations is logged once the master applied it
    /// (`order.applied`, info): the node turns it off when its log level drops info.
    public var logsOwnOperations = true
    /// The store given on the command line, if any.
    public let configuredStore: String?

    public internal(set) var lastSeq: Int64
    public internal(set) var epoch: String?
    public internal(set) var joinedStore: String?
    /// The master's latest sequence as last heard (broadcasts, ready, heartbeats).
    public internal(set) var masterSeq: Int64 = 0
    /// The store's stable seq as the master's last heartbeat said (Docs/PROTOCOL.md 7.18); the
    /// node keeps it with the replica (`sync.stable_seq`). 0 until one says.
    public internal(set) var stableSeq: Int64 = 0
    /// How many times the store's members were committed to the standby copy: a node that
    /// derives something from them (a voter's place) works it out again when this changes.
    public internal(set) var membersCommitted = 0
    public private(set) var link: LinkState = .offline
    /// Set when the replica may differ from the master's truth: the next hello asks for a snapshot.
    public internal(set) var needsSnapshot = false
    /// False while the shell sees several stores and this slave has joined none: `ready` is
    /// then refused instead of joining one by chance.
    public var joinAllowed = true

    /// The outbox, oldest first (mirrors the outbox table).
    public internal(set) var outbox: [OutboxEntry]
    var outboxKeys: [String: [String]] = [:]
    /// Each outbox entry's operation, parsed once when the entry is tracked: rebases read it.
    var outboxOperations: [String: OperationMessage] = [:]
    /// Orders with changes waiting in the outbox, and how many.
    var pendingKeys: [String: Int] = [:]
    /// Operation ids sent on the current link and not answered yet, with what was heard of them.
    var inFlight: [String: (applied: [Order], errors: [WireError])] = [:]
    var syncErrors: [String: WireError]
    private var snapshotParts: [Int: [Order]] = [:]
    private var snapshotInfo: SnapshotPart?
    /// The snapshot being staged part by part, when the store stages (`SnapshotStagingStore`).
    var stagedReceipt = StagedSnapshotReceipt()
    /// Outbox entries the snapshot being received already holds, with their sequence numbers.
    private var snapshotApplied: [String: Int64] = [:]
    /// The operation ids leading the snapshot being received (`AppliedIdsPart`).
    var appliedIds: AppliedIdsCollection?
    /// The broadcast being received in parts (`BroadcastParts`), until its last part.
    var collecting: PartialBroadcast?
    /// The most bytes the parts of one broadcast may add up to (the master's bound on a
    /// broadcast, `MasterEngine.maxBroadcastBytes`, with room for each part's own members).
    public var maxBroadcastPartsBytes = 20 << 20
    var ackScheduled = false
    var retryScheduled = false
    var now: Int64 = 0
    /// This terminal's clock against its master's (`SlaveEngine+Clock.swift`), kept across links.
    public internal(set) var clock = ClockSkew()
    /// How long the master asked this terminal to wait before connecting again (a hello
    /// refused `rate_limited`: its snapshots are limited); nil when it did not. Read by the
    /// shell when the link ends; cleared by the next `linkOpened`.
    public private(set) var reconnectAfterMillis: Int64?
    /// `sync.term`, the term of the entry at `lastSeq`, the term starts learnt, and the term
    /// and bytes (one message) of the broadcast being applied (`SlaveEngine+Standby.swift`).
    public internal(set) var term: Int64
    public internal(set) var lastTerm: Int64
    public internal(set) var termStarts: TermStarts
    var receivedTerm: Int64 = 1
    var receivedWhole: [UInt8]?

    public init(store: any SlaveStore, terminalId: String, terminalName: String, configuredStore: String?) throws {
        self.store = store
        self.terminalId = terminalId
        self.terminalName = terminalName
        self.configuredStore = configuredStore
        let state = try store.loadReplicaState()
        lastSeq = state.lastSeq
        epoch = state.epoch
        joinedStore = state.store
        outbox = state.outbox
        syncErrors = state.syncErrors
        needsSnapshot = state.needsSnapshot
        (term, lastTerm, termStarts) = (state.term, state.lastTerm, state.termStarts)
        for e in outbox { track(e) }
    }

    /// The sequence this slave acknowledges: the last applied, but no more than the base of
    /// the oldest outbox entry. An entry may have been applied by the master without this slave
    /// knowing (a snapshot carries no operation ids); the master keeps the journal entries and
    /// tombstones above every terminal's ack, so a repeat of the entry is still recognised.
    public var ackSeq: Int64 {
        guard let oldest = outbox.map(\.baseSeq).min() else { return lastSeq }
        return min(lastSeq, oldest)
    }

    /// Outbox depth.
    public var outboxCount: Int { outbox.count }
    /// Operations sent on this link and not answered yet.
    public var inFlightCount: Int { inFlight.count }

    /// The sync state of the order with this key (lower-case UUID).
    public func syncState(of key: String) -> SyncState {
        syncStates.of(key)
    }

    // MARK: Link events

    /// The WebSocket link to the master is open: say where this replica is (and its clock, `now`).
    public func linkOpened(now: Int64? = nil) -> [Action] {
        link = .syncing
        reconnectAfterMillis = nil
        resetLink()
        var hello = HelloMessage(
            terminalId: terminalId, terminalName: terminalName, store: configuredStore ?? joinedStore,
            lastSeq: lastSeq, epoch: needsSnapshot ? nil : epoch)
        hello.pending = outbox.prefix(HelloMessage.maxPending).map(\.opId)
        hello.outbox = outbox.count
        (hello.term, hello.lastTerm, hello.termStarts, hello.time) = (term, lastTerm, termStarts, now)
        return [.send(hello.encodedBytes())]
    }

    /// The link ended: what was in flight stays in the outbox and is sent again on the next link.
    public func linkClosed() {
        link = .offline
        resetLink()
    }

    private func resetLink() {
        snapshotParts = [:]
        snapshotApplied = [:]
        snapshotInfo = nil
        stagedReceipt.interrupted()
        appliedIds = nil
        collecting = nil
        inFlight.removeAll()
    }

    /// Asks for an ack shortly (coalesced: at most one waits at a time). Sent after applied
    /// broadcasts and whenever the outbox grows or shrinks, so the master's view of this
    /// terminal (its lag and outbox) follows.
    func scheduleAck(_ out: inout [Action]) {
        guard !ackScheduled else { return }
        ackScheduled = true
        out.append(.scheduleAck)
    }

    /// The ack delay passed.
    public func ackDue() -> [Action] {
        ackScheduled = false
        guard link == .live else { return [] }
        return [.send(ackMessage())]
    }

    /// The retry delay for operations the master could not store passed.
    public func retryOutbox() -> [Action] {
        retryScheduled = false
        var out: [Action] = []
        flushOutbox(&out)
        return out
    }

    /// A message from the master: the payload of a text frame (or of a sealed secure message),
    /// as received. `now` is wall-clock milliseconds, for the records of refusals only.
    public func received(_ bytes: [UInt8], now: Int64) -> [Action] {
        received(DecodedMasterMessage(bytes), now: now)
    }

    /// A message from the master, decoded already (`DecodedMasterMessage`, which the shell may
    /// make on another thread): the same as `received(_:now:)` of its bytes.
    public func received(_ decoded: DecodedMasterMessage, now: Int64) -> [Action] {
        self.now = now
        var out: [Action] = []
        let heldBefore = lastSeq
        let bytes = decoded.bytes
        let reading = decoded.reading
        if standbyHandled(reading, bytes: bytes, &out) { return out }
        let message = reading.message
        if let c = collecting {
            // Parts come one after the other: anything else between them means the link lost some.
            guard case .success(.applied(_, _, _, _, _, nil, .some(_))) = message else {
                partsBroken("a message came between part \(c.received) and part \(c.received + 1) of \(c.parts)", &out)
                return out
            }
        }
        switch message {
        case .failure(let e):
            out.append(.log(EngineLog(.warning, "master.message_invalid", [("reason", "\(e)")])))
        case .success(.applied(let op, let orders, let seq, let opId, let origin, let snapshot, let part)):
            if let snap = snapshot {
                snapshotPart(snap, orders, &out)
            } else if let p = part, let s = seq {
                broadcastPart(
                    p, PartialBroadcast(operation: op, seq: s, opId: opId, origin: origin, parts: p.parts), orders,
                    bytes: bytes.count, &out)
            } else {
                applied(op, orders, seq: seq, opId: opId, origin: origin, &out)
            }
            ackAtOnce(ifMarked: bytes, heldBefore: heldBefore, &out)
        case .success(.ready(let seq, let masterEpoch, let masterStore)):
            guard joinAllowed else {
                out.append(.abort(reason: "several stores on the LAN; start with --store to choose one"))
                return out
            }
            if let s = masterStore, configuredStore == nil, joinedStore != s {
                var c = SlaveCommit()
                c.store = s
                do {
                    try store.commit(c)
                    joinedStore = s
                } catch {
                    out.append(.log(EngineLog(.error, "replica.write_failed", [("error", "\(error)")])))
                }
            }
            readyTerms(reading.term, starts: reading.termStarts, &out)
            masterSeq = max(seq, lastSeq)
            link = .live
            out.append(.send(ackMessage()))
            out.append(.synced(seq: seq, epoch: masterEpoch, store: masterStore))
            flushOutbox(&out)
            resyncIfSettled(&out)
        case .success(.error(let e, let opId, _)):
            if let id = opId, inFlight[id] != nil {
                inFlight[id]?.errors.append(e)
            } else if let id = opId, outboxKeys[id] != nil {
                // For an entry not sent on this link (an answer from before a reconnect): it is
                // sent again and answered again.
            } else if opId == nil, link == .syncing, e.code == .rateLimited {
                // The hello was refused (too many snapshots): the master closes the link; the
                // next attempt waits as long as it said instead of spinning.
                let wait = max(1, e.retryAfterMillis ?? SlaveEngine.outboxRetryMillis)
                reconnectAfterMillis = wait
                out.append(.log(EngineLog(.warning, "master.snapshot_deferred", [("retry_ms", "\(wait)"), ("reason", e.message)])))
            } else {
                out.append(.log(EngineLog(e.logLevel, "master.rejected", [("code", e.code.rawValue), ("reason", e.message)])))
            }
        case .success(.result(let opId, let seq, _, _, let failed)):
            answered(opId: opId, seq: seq, failed: failed, &out)
            resyncIfSettled(&out)
        case .success(.heartbeat(let seq)):
            if let s = reading.stableSeq, s > stableSeq { stableSeqRose(to: s, &out) }
            heartbeat(seq: seq, clock: reading.clock, &out)
        }
        return out
    }

    // MARK: Applying the master's messages

    private func snapshotPart(_ snap: SnapshotPart, _ orders: [Order], _ out: inout [Action]) {
        if let staging = store as? any SnapshotStagingStore {
            stagedSnapshotPart(snap, orders, into: staging, &out)
            return
        }
        if snapshotInfo == nil || snapshotInfo?.seq != snap.seq || snap.part == 1 {
            snapshotParts = [:]
            snapshotApplied = [:]
            snapshotInfo = snap
        }
        snapshotParts[snap.part] = orders
        snapshotApplied.merge(snap.applied) { a, _ in a }
        guard snapshotParts.count >= snap.parts else { return }
        let all = (1...max(1, snap.parts)).flatMap { snapshotParts[$0] ?? [] }
        let held = snapshotApplied.filter { outboxKeys[$0.key] != nil && $0.value <= snap.seq }
        snapshotParts = [:]
        snapshotApplied = [:]
        snapshotInfo = nil
        var overlay: [String: Order?] = [:]
        overlay.reserveCapacity(all.count + outbox.count)
        for o in all { overlay[o.key] = o }
        do {
            var c = SlaveCommit()
            c.feed.append(.snapshot(masterSeq: snap.seq, epoch: snap.epoch, orders: all.count))
            // Outbox entries the master already applied are in the snapshot: answered, they
            // leave the outbox in this transaction and are not applied again on top.
            var settledHere: [(opId: String, keys: [String], seq: Int64?)] = []
            for e in outbox where held[e.opId] != nil {
                // Its orders as the snapshot holds them (the answer a retry of it gets).
                let orders = e.orderKeys.compactMap { overlay[$0] ?? nil }
                settle(e.opId, keys: e.orderKeys, seq: held[e.opId], applied: orders, errors: [], into: &c)
                settledHere.append((e.opId, e.orderKeys, held[e.opId]))
            }
            // Pending local changes go on top of the master's state in the same transaction.
            try rebase(&overlay, keys: nil, fallBackToStore: false, skipping: Set(held.keys))
            // Sorted by the overlay's keys (each lowercased once), not by `Order.key`, which
            // lowercases its UUID on every comparison: with 100k orders that was a third of the
            // slave's CPU in a snapshot.
            c.replaceAll = overlay.keys.sorted().compactMap { overlay[$0] ?? nil }
            try commitSnapshot(&c, snap, orders: all.count, settled: settledHere, &out)
        } catch {
            out.append(.log(EngineLog(.error, "replica.write_failed", [("error", "\(error)")])))
            out.append(.abort(reason: "replica write failed"))
        }
    }

    func applied(_ op: OperationKind, _ orders: [Order], seq: Int64?, opId: String?, origin: String?, _ out: inout [Action]) {
        if let s = seq {
            if s <= lastSeq { return } // already applied
            if s != lastSeq + 1 {
                out.append(.log(EngineLog(.warning, "sync.gap", [("expected", "\(lastSeq + 1)"), ("got", "\(s)"), ("action", "resync")])))
                out.append(.resync(reason: "resync"))
                return
            }
        }
        var overlay: [String: Order?] = [:]
        for o in orders { overlay[o.key] = op == .remove ? .some(nil) : .some(o) }
        var c = SlaveCommit()
        c.feed.append(.applied(operation: op, orders: orders, masterSeq: seq, opId: opId, origin: origin))
        var settled: (opId: String, keys: [String], errors: [WireError])?
        var flagged = false
        do {
            // The master's answer to one of this terminal's own operations: it leaves the outbox
            // in the same transaction (so an acknowledged sequence implies an emptied entry).
            if let id = opId, let keys = outboxKeys[id] {
                let errors = inFlight[id]?.errors ?? []
                let appliedKeys = Set(orders.map(\.key))
                // Orders of the entry the broadcast does not carry were refused (or harmless
                // repeats); when the refusals were not heard (sent before a reconnect), the
                // replica goes back to the master's truth.
                if !errors.isEmpty || keys.contains(where: { !appliedKeys.contains($0) }) {
                    flagged = true
                    c.needsSnapshot = true
                }
                settle(id, keys: keys, seq: seq, applied: orders, errors: errors, into: &c)
                settled = (id, keys, errors)
                inFlight[id]?.applied = orders
            }
            try rebase(&overlay, keys: Set(overlay.keys), fallBackToStore: true, skipping: Set([settled?.opId].compactMap { $0 }))
            c.changes = overlay.sorted { $0.key < $1.key }.map { key, value in
                if let o = value { return .update(o) }
                return .delete(
                    orders.first { $0.key == key } ?? Order(uuid: key, customerName: "", created: OrderTimestamp(epochMillis: 0)))
            }
            if let s = seq { c.lastSeq = s }
            standbyCopy(op, orders, seq: seq, opId: opId, origin: origin, into: &c)
            try store.commit(c)
            adoptTerms(of: c)
        } catch {
            out.append(.log(EngineLog(.error, "replica.write_failed", [("error", "\(error)")])))
            out.append(.abort(reason: "replica write failed"))
            return
        }
        if flagged { needsSnapshot = true }
        if let s = seq {
            lastSeq = s
            masterSeq = max(masterSeq, s)
            scheduleAck(&out)
        }
        if let st = settled {
            forget(st.opId, keys: st.keys, errors: st.errors, &out)
            // One of this terminal's own operations, applied by the master: one info line.
            if logsOwnOperations, !orders.isEmpty {
                out.append(
                    .log(
                        EngineLog(
                            .info, "order.applied",
                            [
                                ("seq", "\(seq ?? 0)"), ("op", "\(op)"), ("order", orders.map(\.uuid).joined(separator: ",")),
                                ("terminal", terminalName), ("op.id", st.opId),
                            ])))
            }
        }
        out.append(.log(EngineLog(.debug, "op.applied", [("op.seq", "\(seq ?? 0)"), ("op.kind", "\(op)"), ("orders", "\(orders.count)")])))
    }
}
