/// Snapshots: one view of the store at a sequence, sent a part at a time, with the terminal's
/// other messages held until the last part.
///
/// Consistency: the snapshot stands at `lastSeq` when it starts. Its orders come from a
/// `SnapshotPages` opened at that sequence: read whole right then (while the engine,
/// single-threaded like every caller of it, stands at `lastSeq`), or, with a paged source
/// (`pagedSnapshots`, the node's), a page at a time from one read transaction the shell begins
/// while the store holds exactly what the engine applied up to `lastSeq`. The parts are cut from
/// that one view, so writes applied meanwhile cannot tear the snapshot. Those writes reach the
/// terminal as the held broadcasts after `ready`, in sequence order, exactly as a terminal
/// expects operations after a snapshot at `seq`.
extension MasterEngine {
    /// The snapshot messages (all orders, in parts) and the sequence they stand at.
    /// `applied` (operation ids the terminal still holds that the snapshot already contains)
    /// goes with the last part.
    public func snapshotMessages(applied: [String: Int64] = [:]) throws -> (messages: [[UInt8]], count: Int, seq: Int64) {
        var stream = try snapshotStream(applied: applied, sendsReady: false)
        return (stream.allParts(), stream.orderCount, stream.seq)
    }

    /// A snapshot of the store as it stands now, ready to be handed out a part at a time.
    /// `clearsStorePOSApp` puts before the Creates a Remove of every order it holds and of every
    /// order the journal records as removed (see `Docs/PROTOCOL.md` 4.2): what a plain StorePOS
    /// terminal needs to end with each order once, whatever it held before.
    public func snapshotStream(applied: [String: Int64] = [:], sendsReady: Bool, clearsStorePOSApp: Bool = false) throws
        -> SnapshotStream
    {
        var read: SnapshotRead
        if let shared = snapshotRead, shared.seq == lastSeq {
            read = shared
        } else if let paged = pagedSnapshots {
            read = SnapshotRead(seq: lastSeq, pages: try paged(lastSeq))
        } else {
            read = SnapshotRead(seq: lastSeq, orders: try store.allOrders(), chunk: snapshotChunk)
        }
        if clearsStorePOSApp, !read.isPaged, read.removed == nil {
            let existing = Set(read.orders.map(\.key))
            let removed = try (store.removedOrderUUIDs() + store.clearedForeignUUIDs()).filter { !existing.contains($0.lowercased()) }
            read.removed = removed
            read.pages = LoadedSnapshotPages(orders: read.orders, removed: removed, pageSize: snapshotChunk)
        }
        snapshotRead = read
        var stream = SnapshotStream(
            pages: read.pages, seq: lastSeq, epoch: epoch, storeId: storeId, applied: applied, sendsReady: sendsReady,
            clearsOrders: clearsStorePOSApp, fence: clearsStorePOSApp ? storePOSFence : 0)
        if !clearsStorePOSApp { stream.terms = terms }
        return stream
    }

    /// Whether the terminal's snapshot waits for its orders (a paged read opening, or the page
    /// its next part is cut from being read): the shell asks again when the read has more.
    public func isSnapshotReading(_ id: Int) -> Bool { snapshots[id]?.isReading == true }

    /// Whether the terminal's snapshot is still going out.
    public func isReceivingSnapshot(_ id: Int) -> Bool { snapshots[id] != nil }

    /// Whether the terminal's snapshot waits at a pause (a StorePOS app's connect sequence,
    /// after each fence): the shell calls `snapshotSettled(_:)` once the link has written
    /// everything and the settle time passed.
    public func isSnapshotSettling(_ id: Int) -> Bool { snapshots[id]?.isSettling == true }

    /// The pause the terminal's snapshot waits at is over: what follows it may go (after the
    /// last pause, `ready` and the held messages); the shell then asks for the next parts.
    public func snapshotSettled(_ id: Int) -> [Action] {
        guard var stream = snapshots[id], stream.isSettling else { return [] }
        stream.settle()
        var out: [Action] = []
        if stream.isComplete {
            completeSnapshot(stream, to: id, &out)
        } else {
            snapshots[id] = stream
        }
        return out
    }

    /// The next parts of the terminal's snapshot (the shell asks when the terminal's send buffer
    /// has room): up to `maxParts`, and no more once they come to `maxBytes` (the part that
    /// reaches it included); fewer when the stream reaches a pause or waits for a page. After the
    /// last part, `ready` and every message held meanwhile. Nothing when no snapshot is going
    /// out to it.
    public func snapshotDue(for id: Int, maxParts: Int = 1, maxBytes: Int = .max) -> [Action] {
        guard var stream = snapshots[id] else { return [] }
        if let failure = stream.readFailure { return snapshotReadFailed(id, failure) }
        var out: [Action] = []
        var bytes = 0
        while out.count < maxParts, bytes < maxBytes, let part = stream.nextPart() {
            if !stream.lead.isEmpty {
                out += stream.lead.map { .send(peer: id, bytes: $0) }
                stream.lead = []
            }
            out.append(.send(peer: id, bytes: part))
            bytes += part.count
            if stream.isComplete {
                completeSnapshot(stream, to: id, &out)
                return out
            }
        }
        // Keep what the stream learnt (it opened, or handed out parts).
        snapshots[id] = stream
        return out
    }

    /// Starts the terminal's snapshot: every part at once, or (`pacesSnapshots`) none yet;
    /// `lead` goes before the first part.
    func sendSnapshot(to id: Int, applied: [String: Int64] = [:], lead: [[UInt8]] = [], _ out: inout [Action]) {
        guard let p = peers[id] else { return }
        do {
            var stream = try snapshotStream(
                applied: applied, sendsReady: p.speaksOrderSync, clearsStorePOSApp: !p.speaksOrderSync)
            stream.lead = lead
            peers[id]?.copyFloor = stream.seq
            peers[id]?.copyIsSnapshot = true
            if pacesSnapshots {
                snapshots[id] = stream
                peers[id]?.phase = .receivingSnapshot
                out.append(
                    .log(
                        EngineLog(
                            .debug, "snapshot.started",
                            [
                                ("peer.address", p.address), ("orders", "\(stream.orderCount)"),
                                ("removes", "\(stream.clearingCount)"), ("seq", "\(stream.seq)"),
                                ("messages", "\(stream.parts)"),
                            ])))
                return
            }
            for part in stream.lead + stream.allParts() { out.append(.send(peer: id, bytes: part)) }
            completeSnapshot(stream, to: id, &out)
        } catch {
            out.append(.log(EngineLog(.error, "snapshot.failed", [("peer.address", p.address), ("error", "\(error)")])))
            out.append(.close(peer: id, code: MasterEngine.internalError, reason: "could not read the store"))
        }
    }

    /// The terminal's snapshot cannot be read: it is closed (1011), like a snapshot that could
    /// not start, and gets a fresh one when it reconnects.
    private func snapshotReadFailed(_ id: Int, _ failure: String) -> [Action] {
        endSnapshot(of: id)
        peers[id]?.phase = .closing
        return [
            .log(EngineLog(.error, "snapshot.failed", [("peer.address", peers[id]?.address ?? "?"), ("error", failure)])),
            .close(peer: id, code: MasterEngine.internalError, reason: "could not read the store"),
        ]
    }

    /// Tells the snapshots going out that an operation applied after their sequence created
    /// these orders (keys): they do not hold them (`SnapshotStream.hasHandedOut(_:)`).
    func noteCreatedDuringSnapshots(_ keys: [String]) {
        guard !snapshots.isEmpty else { return }
        for id in snapshots.keys { snapshots[id]?.noteCreated(keys) }
    }

    /// After the last part: `ready`, the held messages; the terminal is live.
    private func completeSnapshot(_ stream: SnapshotStream, to id: Int, _ out: inout [Action]) {
        var stream = stream
        let held = stream.held.count
        for text in stream.finish() { out.append(.send(peer: id, bytes: text)) }
        sendMembers(to: id, &out)
        endSnapshot(of: id)
        peers[id]?.phase = .live
        out.append(
            .log(
                EngineLog(
                    .info, "snapshot.sent",
                    [
                        ("peer.address", peers[id]?.address ?? "?"), ("orders", "\(stream.orderCount)"),
                        ("removes", "\(stream.clearingCount)"), ("seq", "\(stream.seq)"),
                        ("messages", "\(stream.parts)"), ("held", "\(held)"),
                    ])))
    }

    /// Forgets the terminal's snapshot, and the shared read once no snapshot uses it.
    func endSnapshot(of id: Int) {
        snapshots[id] = nil
        if snapshots.isEmpty { snapshotRead = nil }
    }

    /// Holds what is meant for terminals whose snapshot is still going out: a message to one of
    /// them, and a broadcast meant for them (the broadcast goes on to the others). A terminal whose held
    /// messages outgrow `maxHeldSnapshotBytes` is closed; it gets a fresh snapshot when it
    /// reconnects.
    func route(_ actions: [Action]) -> [Action] {
        guard !snapshots.isEmpty else { return actions }
        var out: [Action] = []
        var overrun: [Int] = []
        for action in actions {
            switch action {
            case .send(let id, let text) where snapshots[id] != nil:
                snapshots[id]?.hold(text)
                if (snapshots[id]?.heldBytes ?? 0) > maxHeldSnapshotBytes { overrun.append(id) }
            case .broadcast(let text, let recipients):
                out.append(.broadcast(bytes: text, peers: recipients.filter { snapshots[$0] == nil }))
                for id in recipients where snapshots[id] != nil {
                    snapshots[id]?.hold(text)
                    if (snapshots[id]?.heldBytes ?? 0) > maxHeldSnapshotBytes { overrun.append(id) }
                }
            case .close(let id, _, _):
                endSnapshot(of: id)
                out.append(action)
            default:
                out.append(action)
            }
        }
        for id in Set(overrun).sorted() where snapshots[id] != nil {
            let stream = snapshots[id]
            endSnapshot(of: id)
            peers[id]?.phase = .closing
            out.append(
                .log(
                    EngineLog(
                        .warning, "snapshot.overrun",
                        [
                            ("peer.address", peers[id]?.address ?? "?"), ("held_bytes", "\(stream?.heldBytes ?? 0)"),
                            ("part", "\(stream?.sentParts ?? 0)"), ("parts", "\(stream?.parts ?? 0)"),
                        ])))
            out.append(.close(peer: id, code: MasterEngine.tryAgainLater, reason: "too far behind during its snapshot"))
        }
        return out
    }
}

/// What the master read for the snapshots starting at one sequence, shared by the terminals
/// joining at it.
struct SnapshotRead {
    /// The sequence the read stands at.
    var seq: Int64
    /// The orders, whole or a page at a time.
    var pages: any SnapshotPages
    /// True for a paged source (`MasterEngine.pagedSnapshots`), which reads the removed orders
    /// itself.
    let isPaged: Bool
    /// Every order, as `MasterStore.allOrders()` lists them, when read whole (else empty).
    var orders: [Order]
    /// The removed orders a StorePOS app may still hold (none of `orders`), when read whole: read
    /// the first time a StorePOS terminal joins at `seq`.
    var removed: [String]?

    /// A read of every order at once, in pages of `chunk`.
    init(seq: Int64, orders: [Order], chunk: Int) {
        self.seq = seq
        self.orders = orders
        self.pages = LoadedSnapshotPages(orders: orders, pageSize: chunk)
        self.isPaged = false
    }

    /// A paged read at `seq`.
    init(seq: Int64, pages: any SnapshotPages) {
        self.seq = seq
        self.orders = []
        self.pages = pages
        self.isPaged = true
    }
}
