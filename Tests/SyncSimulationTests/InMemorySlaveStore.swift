import SyncCore

/// A slave's replica in memory, behaving like `SQLiteSlaveStore`: a `SlaveCommit` is one
/// transaction applied in the documented order (replace all, changes as upserts and
/// delete-if-present, position, outbox, sync errors, rejections); an outbox `op_id` is unique;
/// positions are never reused (AUTOINCREMENT); a sync error keeps only its code, message and key.
/// Everything committed is "on disk": a crash keeps exactly that.
///
/// It also records what the checker needs: the replica position of every commit that set one,
/// and whether that commit was a snapshot.
class InMemorySlaveStore: SlaveStore {
    private(set) var orders: [String: Order] = [:]
    private(set) var lastSeq: Int64 = 0
    private(set) var epoch: String?
    private(set) var storeName: String?
    private(set) var outbox: [OutboxEntry] = []
    private(set) var syncErrors: [String: WireError] = [:]
    private(set) var rejections: [Rejection] = []
    private(set) var needsSnapshot = false
    /// Kept answers, oldest first (the newest `SlaveCommit.answeredKept`).
    private(set) var answered: [AnsweredOperation] = []
    /// The standby copy: the master's entries applied since the last snapshot (and those kept
    /// through it, 7.19), their tombstones, and the terms (`Docs/PROTOCOL.md` 7).
    private(set) var journal: [JournalEntry] = []
    private(set) var tombstones: [String: Int64] = [:]
    private(set) var term: Int64 = 1
    private(set) var termStarts = TermStarts()
    private var baseTerm: Int64 = 1
    /// The seq of the last snapshot the standby copy starts after (`standby.base`).
    private(set) var standbyBase: Int64?
    private var nextPosition: Int64 = 1

    /// The position set by each commit that set one, in commit order, across crashes.
    private(set) var appliedLog: [(seq: Int64, snapshot: Bool)] = []
    /// Decides whether the next commit fails before applying anything (nil: never).
    var faults: (() -> Bool)?
    /// Commits that failed (injected).
    private(set) var failedCommits = 0

    init() {}

    func order(uuid: String) throws -> Order? { orders[uuid.lowercased()] }

    func outboxEntries() throws -> [OutboxEntry] { outbox }

    func loadReplicaState() throws -> ReplicaState {
        var state = ReplicaState(
            lastSeq: lastSeq, epoch: epoch, store: storeName, outbox: outbox, syncErrors: syncErrors,
            needsSnapshot: needsSnapshot)
        (state.term, state.termStarts) = (term, termStarts)
        state.lastTerm = journal.last { $0.seq == lastSeq }?.term ?? baseTerm
        return state
    }

    func standbyJournal(after seq: Int64) throws -> [JournalEntry] { journal.filter { $0.seq > seq } }

    func answeredOperation(opId: String) throws -> AnsweredOperation? { answered.last { $0.opId == opId } }

    func commit(_ c: SlaveCommit) throws {
        if faults?() == true {
            failedCommits += 1
            throw SimStoreError("disk full (injected)")
        }
        var o = orders
        if let all = c.replaceAll {
            o = [:]
            for x in all {
                guard o[x.key] == nil else { throw SimStoreError("snapshot has order \(x.uuid) twice") }
                o[x.key] = x
            }
        }
        for change in c.changes {
            switch change {
            case .insert(let x), .update(let x): o[x.key] = x
            case .delete(let x): o[x.key] = nil
            }
        }
        var box = outbox
        var position = nextPosition
        var front = (box.map(\.position).min() ?? position) - Int64(c.prependOutbox.count)
        for e in c.prependOutbox where !box.contains(where: { $0.opId == e.opId }) {
            var stored = e
            stored.position = front
            front += 1
            box.insert(stored, at: box.firstIndex { $0.position > stored.position } ?? box.endIndex)
        }
        for e in c.appendOutbox {
            guard !box.contains(where: { $0.opId == e.opId }) else {
                throw SimStoreError("outbox already holds op id \(e.opId)")
            }
            var stored = e
            stored.position = position
            position += 1
            box.append(stored)
        }
        box.removeAll { c.deleteOutbox.contains($0.opId) }
        try apply(orders: o, outbox: box, nextPosition: position, c)
    }

    /// Makes a checked commit durable (a subclass may lose it on purpose).
    func apply(orders o: [String: Order], outbox box: [OutboxEntry], nextPosition position: Int64, _ c: SlaveCommit) throws {
        orders = o
        outbox = box
        nextPosition = position
        applyStandby(c)
        if let s = c.lastSeq {
            lastSeq = s
            appliedLog.append((s, c.replaceAll != nil))
        }
        if let e = c.epoch { epoch = e }
        if let s = c.store { storeName = s }
        for (key, error) in c.syncErrors.sorted(by: { $0.key < $1.key }) {
            let k = key.lowercased()
            syncErrors[k] = error.map { WireError($0.code, $0.message, uuid: k) }
        }
        rejections.append(contentsOf: c.rejections)
        if let n = c.needsSnapshot { needsSnapshot = n }
        for a in c.answered {
            answered.removeAll { $0.opId == a.opId }
            answered.append(a)
        }
        if answered.count > SlaveCommit.answeredKept { answered.removeFirst(answered.count - SlaveCommit.answeredKept) }
    }

    /// The standby copy of `c`, as `SQLiteSlaveStore` writes it.
    private func applyStandby(_ c: SlaveCommit) {
        if let base = c.standbyBase {
            // A snapshot of the history it followed keeps what `diverged` would re-queue (7.19).
            if let above = c.keepJournalAbove, c.epoch == nil || c.epoch == epoch {
                journal.removeAll { $0.seq <= above || $0.seq > base }
                for e in c.keptEntries where e.seq > above && e.seq <= base {
                    guard !journal.contains(where: { $0.seq == e.seq || ($0.opId != nil && $0.opId == e.opId) }) else { continue }
                    journal.append(e)
                }
                journal.sort { $0.seq < $1.seq }
            } else {
                journal = []
            }
            baseTerm = c.baseTerm ?? 1
            standbyBase = base
        }
        if let keep = c.truncateJournal { journal.removeAll { $0.seq > keep } }
        for e in c.journal {
            journal.append(e)
            if e.operation == .remove { for u in e.orderUUIDs { tombstones[u.lowercased()] = e.seq } }
        }
        if let t = c.term { term = t }
        if let s = c.termStarts { termStarts = s }
        // The stable seq passed entries kept through a snapshot: they go (7.19).
        if let s = c.stableSeq, let base = standbyBase { journal.removeAll { $0.seq <= min(s, base) } }
    }

    /// The node's process died: what was committed stays (a subclass may lose more on purpose).
    func crashed() {}

    /// Drops the outbox, as a broken store that never made it durable would (for self-checks).
    func loseOutbox() { outbox = [] }
}
