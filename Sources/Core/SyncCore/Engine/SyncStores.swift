/// What the master engine needs from durable storage. The node implements it on SQLite; the
/// simulation implements it in memory. Every `commit`-like call is atomic and durable when it
/// returns: after a crash either all of it or none of it is there. A call may throw after its
/// change reached the disk (a commit reported as failed); the engine must stay correct then too.
public protocol MasterStore: AnyObject {
    func order(uuid: String) throws -> Order?
    func hasTombstone(uuid: String) throws -> Bool
    func allOrders() throws -> [Order]
    func lastJournalSeq() throws -> Int64
    func firstJournalSeq() throws -> Int64?
    /// Entries with `seq > since`, oldest first, at most `limit`.
    func journal(since seq: Int64, limit: Int) throws -> [JournalEntry]
    func journalEntry(opId: String) throws -> JournalEntry?
    /// The seq at which `opId` was applied below the journal (a node promoted from a snapshot
    /// keeps the ids the snapshot covers, `Docs/PROTOCOL.md` 7.2), or nil.
    func appliedOpIdSeq(opId: String) throws -> Int64?
    /// The operation ids of the history up to `seq` (journal and below it), newest first, at
    /// most `limit`: what a standby's snapshot at `seq` carries.
    func appliedOpIds(through seq: Int64, limit: Int) throws -> [String: Int64]
    /// The orders the journal records as removed, as first written, newest removal first, each
    /// once (any case); orders that exist again may be among them.
    func removedOrderUUIDs() throws -> [String]
    func rejections(opId: String) throws -> [Rejection]
    /// In one transaction: the order changes, a tombstone at `entry.seq` for each delete, and
    /// the journal entry.
    func commit(_ changes: [OrderChange], entry: JournalEntry) throws
    func appendRejection(_ rejection: Rejection) throws
    /// Records (or refreshes) terminals, in one transaction.
    func saveTerminals(_ terminals: [KnownTerminal]) throws
    func knownTerminals() throws -> [KnownTerminal]
    @discardableResult func forgetTerminals(lastSeenBefore millis: Int64) throws -> Int
    @discardableResult func compactTombstones(through seq: Int64) throws -> Int
    /// Deletes journal entries with `seq <= through` and `recordedAtMillis < before`.
    @discardableResult func compactJournal(through seq: Int64, recordedBefore millis: Int64) throws -> Int
    /// Records that a StorePOS app named an order the store does not have (`ForeignOrder`):
    /// a new record, or the existing one's last sighting, content, address and count refreshed.
    /// True when the uuid (any case) was not recorded before.
    @discardableResult func noteForeignOrder(_ sighting: ForeignOrder) throws -> Bool
    /// The foreign orders an operator cleared, as the app wrote them: the connect sequence of a
    /// StorePOS app names them among its Removes.
    func clearedForeignUUIDs() throws -> [String]
    /// Every foreign order recorded, first seen first.
    func foreignOrders() throws -> [ForeignOrder]
    /// Sets the state of these foreign orders (by uuid, any case).
    func setForeignOrders(_ uuids: [String], state: ForeignOrder.State) throws
    /// The master's term and its lineage's term starts (`sync.term`, `sync.term_starts`).
    func masterTerms() throws -> MasterTerms
}

extension MasterStore {
    /// A store that keeps no foreign orders (the simulation's) records nothing.
    public func noteForeignOrder(_ sighting: ForeignOrder) throws -> Bool { false }
    /// A store that keeps no foreign orders has none cleared.
    public func clearedForeignUUIDs() throws -> [String] { [] }
    /// A store that keeps no foreign orders lists none.
    public func foreignOrders() throws -> [ForeignOrder] { [] }
    /// A store that keeps no foreign orders has nothing to mark.
    public func setForeignOrders(_ uuids: [String], state: ForeignOrder.State) throws {}
    /// A store that keeps no terms is in term 1.
    public func masterTerms() throws -> MasterTerms { MasterTerms() }
    /// A store that keeps no ids below its journal knows none there.
    public func appliedOpIdSeq(opId: String) throws -> Int64? { nil }
    /// A store that keeps no ids below its journal gives its journal's.
    public func appliedOpIds(through seq: Int64, limit: Int) throws -> [String: Int64] {
        var ids: [String: Int64] = [:]
        for e in try journal(since: 0, limit: Int.max).reversed() where e.seq <= seq && ids.count < limit {
            if let id = e.opId { ids[id] = e.seq }
        }
        return ids
    }

    /// Reads the whole journal; a store that can do better (SQLite: one query of one column)
    /// implements it itself.
    public func removedOrderUUIDs() throws -> [String] {
        var seen: Set<String> = []
        var uuids: [String] = []
        for entry in try journal(since: 0, limit: Int.max).reversed() where entry.operation == .remove {
            for uuid in entry.orderUUIDs where seen.insert(uuid.lowercased()).inserted { uuids.append(uuid) }
        }
        return uuids
    }
}

/// A slave's persisted sync state, read once at start.
public struct ReplicaState: Equatable, Sendable {
    public var lastSeq: Int64
    public var epoch: String?
    public var store: String?
    public var outbox: [OutboxEntry]
    /// The master's last refusal of a local change, by order key, kept until the next local
    /// change to that order.
    public var syncErrors: [String: WireError]
    /// The replica may differ from the master's truth (a local change was refused or answered
    /// from before): the next hello asks for a snapshot.
    public var needsSnapshot: Bool
    /// `sync.term`, the term of the entry at `lastSeq`, and the term starts it learnt
    /// (`Docs/PROTOCOL.md` 7.1).
    public var term: Int64 = 1
    public var lastTerm: Int64 = 1
    public var termStarts = TermStarts()

    public init(
        lastSeq: Int64 = 0, epoch: String? = nil, store: String? = nil, outbox: [OutboxEntry] = [],
        syncErrors: [String: WireError] = [:], needsSnapshot: Bool = false
    ) {
        self.lastSeq = lastSeq
        self.epoch = epoch
        self.store = store
        self.outbox = outbox
        self.syncErrors = syncErrors
        self.needsSnapshot = needsSnapshot
    }
}

/// One atomic write to a slave's replica, applied in this order: `replaceAll`, `changes`, the
/// replica position, the outbox, the sync errors, the rejections, the snapshot flag, the
/// answered operations.
public struct SlaveCommit: Equatable, Sendable {
    /// A snapshot: every order, replacing what the replica holds.
    public var replaceAll: [Order]?
    /// A snapshot staged part by part (`SnapshotStagingStore`): the staged orders, with
    /// `changes` on top, replace what the replica holds.
    public var replaceAllWithStaged = false
    /// Inserts and updates are upserts; a delete of an absent order does nothing.
    public var changes: [OrderChange] = []
    public var lastSeq: Int64?
    public var epoch: String?
    public var store: String?
    public var appendOutbox: [OutboxEntry] = []
    /// Entries put back in front of the outbox, in this order (a divergent tail re-queued: what
    /// the terminal queued since may depend on it).
    public var prependOutbox: [OutboxEntry] = []
    public var deleteOutbox: [String] = []
    /// Per order key: a refusal to keep, or nil to clear it.
    public var syncErrors: [String: WireError?] = [:]
    public var rejections: [Rejection] = []
    /// Sets (or clears) the replica's need of a snapshot.
    public var needsSnapshot: Bool?
    /// Answers to this slave's own operations, kept (the oldest beyond
    /// `SlaveCommit.answeredKept` go).
    public var answered: [AnsweredOperation] = []
    /// What the slave's change feed records of this commit (Docs/API.md, "Change feed").
    public var feed: [SlaveFeedEvent] = []
    /// Standby copy (`Docs/PROTOCOL.md` 7), applied before the changes: a snapshot at this seq
    /// (of `baseTerm`) empties the standby journal; a divergence drops its entries after this seq.
    public var standbyBase: Int64?
    public var baseTerm: Int64?
    public var truncateJournal: Int64?
    /// The master's entries applied (a tombstone for each order a Remove names), after the changes.
    public var journal: [JournalEntry] = []
    /// `sync.term`, `sync.term_starts`, and the store's members and settings.
    public var term: Int64?
    public var termStarts: TermStarts?
    public var members: StoreMembers?
    /// With `standbyBase`: the operation ids the master's history holds up to the snapshot, with
    /// their seqs, kept below the emptied journal (with the journal's own).
    public var appliedOpIds: [String: Int64] = [:]
    /// With `standbyBase` (`Docs/PROTOCOL.md` 7.19): the journal entries above this seq (the
    /// stable seq the slave knew) and at or below the base stay through a snapshot of the
    /// lineage it followed, with `keptEntries` (its own writes the snapshot answered), so that a
    /// later `diverged` below the base re-queues them; nil empties the journal.
    public var keepJournalAbove: Int64?
    public var keptEntries: [JournalEntry] = []
    /// The store's stable seq a heartbeat raised (`Docs/PROTOCOL.md` 7.18): kept unless lower
    /// than the one on disk, and the entries kept through a snapshot at or below it leave the
    /// journal in this commit (7.19: no promotion that was not forced undoes them).
    public var stableSeq: Int64?

    /// How many answered operation ids a slave remembers.
    public static let answeredKept = 10_000

    public init() {}

    /// True when there is nothing to write.
    public var isEmpty: Bool {
        replaceAll == nil && changes.isEmpty && lastSeq == nil && epoch == nil && store == nil && appendOutbox.isEmpty
            && !replaceAllWithStaged
            && prependOutbox.isEmpty && deleteOutbox.isEmpty && syncErrors.isEmpty && rejections.isEmpty
            && needsSnapshot == nil && answered.isEmpty && feed.isEmpty && standbyBase == nil && truncateJournal == nil
            && journal.isEmpty && term == nil && termStarts == nil && members == nil && stableSeq == nil
    }
}

/// What the slave engine needs from durable storage (SQLite in the node, memory in the
/// simulation). `commit` is atomic and durable when it returns.
public protocol SlaveStore: AnyObject {
    func order(uuid: String) throws -> Order?
    func loadReplicaState() throws -> ReplicaState
    func outboxEntries() throws -> [OutboxEntry]
    /// The kept answer to this slave's operation `opId`, if any.
    func answeredOperation(opId: String) throws -> AnsweredOperation?
    func commit(_ commit: SlaveCommit) throws
    /// The standby journal's entries with `seq > after`, oldest first (a divergence re-queues them).
    func standbyJournal(after seq: Int64) throws -> [JournalEntry]
}

extension SlaveStore {
    /// A store that keeps no standby journal has none to give back.
    public func standbyJournal(after seq: Int64) throws -> [JournalEntry] { [] }
}

/// A log record an engine asks its shell to write (the engines have no logger of their own).
public struct EngineLog: Equatable, Sendable {
    /// How much an operator needs to see it: `notice` is a client's mistake (a refused
    /// operation), not a fault of the node.
    public enum Level: Sendable { case debug, info, notice, warning, error }
    public var level: Level
    public var event: String
    public var metadata: [(String, String)]

    public init(_ level: Level, _ event: String, _ metadata: [(String, String)] = []) {
        self.level = level
        self.event = event
        self.metadata = metadata
    }

    public static func == (a: EngineLog, b: EngineLog) -> Bool {
        a.level == b.level && a.event == b.event && a.metadata.map { $0.0 + "=" + $0.1 } == b.metadata.map { $0.0 + "=" + $0.1 }
    }
}
