import SyncCore

/// A storage failure the simulation injects.
enum StoreFault: Equatable {
    case none
    /// The call throws and nothing is stored (disk full).
    case failBefore
    /// The change reaches the disk, then the call throws (the commit is reported as failed).
    case failAfter
}

/// The error an in-memory store throws.
struct SimStoreError: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) { self.description = description }
}

/// The calls of a master store where the simulation may inject a failure.
enum MasterStoreCall {
    case commit
    case appendRejection
    case saveTerminals
}

/// The master's store in memory, behaving like the SQLite one (`OrderDatabase` behind
/// `SQLiteMasterStore`): one commit is all or nothing, an insert of an existing order or an
/// update or delete of a missing one fails the whole transaction, `op_id` and `seq` are unique
/// among the journal rows still present, `journal(since:limit:)` is ascending, tombstones are
/// `INSERT OR REPLACE`d at the entry's seq, terminals are upserts, `allOrders` is ordered by
/// `created`, then key. Everything stored is "on disk": dropping the engine and making a new one
/// from this store is a crash and restart.
class InMemoryMasterStore: MasterStore {
    private(set) var orders: [String: Order] = [:]
    private(set) var tombstones: [String: Int64] = [:]
    private(set) var journalRows: [JournalEntry] = []
    private(set) var rejectionRows: [Rejection] = []
    private var terminals: [String: KnownTerminal] = [:]
    private var nextRejectionId: Int64 = 1

    /// Every journal entry ever stored, compacted or not, in the order stored (for the checker).
    private(set) var history: [JournalEntry] = []
    /// Decides, per call, whether it fails (set by the simulation; nil: never).
    var faults: ((MasterStoreCall) -> StoreFault)?
    /// Operation ids journalled again after their first entry had been compacted away (the
    /// master could no longer recognise the repeat), for the checker.
    private(set) var reappliedAfterCompaction: [String] = []
    /// Rejections that could not be recorded (injected failures), for the checker.
    private(set) var lostRejections: [Rejection] = []
    /// The journal's UNIQUE constraint on `op_id` (off only in a deliberately broken store).
    var uniqueOpIds = true
    /// While true the engine's lookups of operation ids find nothing (the `applyRepeat`
    /// mutation turns it on for one call).
    var opIdsHidden = false

    init() {}

    private func fault(_ call: MasterStoreCall) -> StoreFault { faults?(call) ?? .none }

    func order(uuid: String) throws -> Order? { orders[uuid.lowercased()] }

    func hasTombstone(uuid: String) throws -> Bool { tombstones[uuid.lowercased()] != nil }

    func allOrders() throws -> [Order] {
        orders.values.sorted { a, b in
            a.created.epochMillis != b.created.epochMillis ? a.created.epochMillis < b.created.epochMillis : a.key < b.key
        }
    }

    func lastJournalSeq() throws -> Int64 { journalRows.last?.seq ?? 0 }

    func firstJournalSeq() throws -> Int64? { journalRows.first?.seq }

    func journal(since seq: Int64, limit: Int) throws -> [JournalEntry] {
        guard limit >= 0 else { throw SimStoreError("limit must not be negative (got \(limit))") }
        return Array(journalRows.lazy.filter { $0.seq > seq }.prefix(limit))
    }

    func journalEntry(opId: String) throws -> JournalEntry? {
        opIdsHidden ? nil : journalRows.first { $0.opId == opId }
    }

    func rejections(opId: String) throws -> [Rejection] {
        opIdsHidden ? [] : rejectionRows.filter { $0.opId == opId }
    }

    func commit(_ changes: [OrderChange], entry: JournalEntry) throws {
        let f = fault(.commit)
        if f == .failBefore { throw SimStoreError("disk full (injected before the commit)") }
        var o = orders
        var t = tombstones
        for change in changes {
            switch change {
            case .insert(let x):
                guard o[x.key] == nil else { throw SimStoreError("an order with uuid \(x.uuid) already exists") }
                o[x.key] = x
            case .update(let x):
                guard o[x.key] != nil else { throw SimStoreError("no order \(x.uuid) to update") }
                o[x.key] = x
            case .delete(let x):
                guard o[x.key] != nil else { throw SimStoreError("no order \(x.uuid) to delete") }
                o[x.key] = nil
                t[x.key] = entry.seq
            }
        }
        if journalRows.contains(where: { $0.seq == entry.seq || (uniqueOpIds && entry.opId != nil && $0.opId == entry.opId) }) {
            throw SimStoreError("journal entry \(entry.seq) (op id \(entry.opId ?? "none")) is already recorded")
        }
        // INTEGER PRIMARY KEY order: rows are kept sorted by seq.
        if let last = journalRows.last, last.seq > entry.seq {
            throw SimStoreError("journal entry \(entry.seq) below the last one \(last.seq)")
        }
        if let id = entry.opId, history.contains(where: { $0.opId == id }), !journalRows.contains(where: { $0.opId == id }) {
            reappliedAfterCompaction.append(id)
        }
        orders = o
        tombstones = t
        journalRows.append(entry)
        history.append(entry)
        if f == .failAfter { throw SimStoreError("I/O error (injected after the commit reached the disk)") }
    }

    func appendRejection(_ rejection: Rejection) throws {
        let f = fault(.appendRejection)
        if f == .failBefore {
            lostRejections.append(rejection)
            throw SimStoreError("disk full (injected)")
        }
        var r = rejection
        r.id = nextRejectionId
        nextRejectionId += 1
        rejectionRows.append(r)
        if f == .failAfter { throw SimStoreError("I/O error (injected after the rejection was stored)") }
    }

    func saveTerminals(_ list: [KnownTerminal]) throws {
        let f = fault(.saveTerminals)
        if f == .failBefore { throw SimStoreError("disk full (injected)") }
        for t in list { terminals[t.id] = t }
        if f == .failAfter { throw SimStoreError("I/O error (injected after the terminals were stored)") }
    }

    func knownTerminals() throws -> [KnownTerminal] {
        terminals.values.sorted { $0.name != $1.name ? $0.name < $1.name : $0.id < $1.id }
    }

    @discardableResult
    func forgetTerminals(lastSeenBefore millis: Int64) throws -> Int {
        let gone = terminals.values.filter { $0.lastSeenMillis < millis }.map(\.id)
        for id in gone { terminals[id] = nil }
        return gone.count
    }

    @discardableResult
    func compactTombstones(through seq: Int64) throws -> Int {
        let gone = tombstones.filter { $0.value <= seq }.map(\.key)
        for k in gone { tombstones[k] = nil }
        return gone.count
    }

    /// Like `OrderDatabase.compactJournal`: the run of oldest entries up to `seq`, stopping
    /// before the first one recorded at or after `millis`.
    @discardableResult
    func compactJournal(through seq: Int64, recordedBefore millis: Int64) throws -> Int {
        let young = journalRows.first { $0.seq <= seq && $0.recordedAtMillis >= millis }?.seq
        let limit = min(seq, (young ?? Int64.max) - 1)
        guard limit > 0 else { return 0 }
        let before = journalRows.count
        journalRows.removeAll { $0.seq <= limit }
        return before - journalRows.count
    }

    /// The terminal record for `id`, for the checker.
    func terminal(_ id: String) -> KnownTerminal? { terminals[id] }
}
