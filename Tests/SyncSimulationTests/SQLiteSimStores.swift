import OrderStore
import SyncCore

/// Reads the store for the checker; a failure is kept (the checker reports it) and `fallback`
/// returned, so one broken read does not end the whole test process.
func checkedRead<T>(_ failures: inout [String], _ what: String, _ fallback: T, _ body: () throws -> T) -> T {
    do {
        return try body()
    } catch {
        failures.append("\(what): \(error)")
        return fallback
    }
}

/// The master's store on the real adapter (`SQLiteMasterStore`) over an in-memory SQLite
/// database, with the simulation's faults: a commit failing "before the disk" fails inside the
/// transaction after the adapter wrote everything, so SQLite must roll all of it back; one failing
/// "after" commits, then throws. A crash keeps the same database: every transaction is closed when
/// an engine call returns, so what a crash loses is what rolled back (checked at each crash).
/// What SQLite forgets (compacted entries) is recorded on the side for the checker.
final class SQLiteSimMasterStore: SimMasterStore {
    let db: OrderDatabase
    private let store: SQLiteMasterStore
    var faults: ((MasterStoreCall) -> StoreFault)?
    private(set) var history: [JournalEntry] = []
    private(set) var lostRejections: [Rejection] = []
    private(set) var reappliedAfterCompaction: [String] = []
    private(set) var readFailures: [String] = []

    init() throws {
        db = try OrderDatabase.inMemory()
        store = SQLiteMasterStore(db: db)
    }

    private func fault(_ call: MasterStoreCall) -> StoreFault { faults?(call) ?? .none }

    /// Runs `write` in a transaction that then fails: SQLite must undo all of it.
    private func failInsideTransaction(_ write: () throws -> Void) throws {
        try db.transaction {
            try write()
            throw SimStoreError("disk full (injected before COMMIT)")
        }
    }

    func order(uuid: String) throws -> Order? { try store.order(uuid: uuid) }
    func hasTombstone(uuid: String) throws -> Bool { try store.hasTombstone(uuid: uuid) }
    func allOrders() throws -> [Order] { try store.allOrders() }
    func lastJournalSeq() throws -> Int64 { try store.lastJournalSeq() }
    func firstJournalSeq() throws -> Int64? { try store.firstJournalSeq() }
    func journal(since seq: Int64, limit: Int) throws -> [JournalEntry] { try store.journal(since: seq, limit: limit) }
    func journalEntry(opId: String) throws -> JournalEntry? { try store.journalEntry(opId: opId) }
    func rejections(opId: String) throws -> [Rejection] { try store.rejections(opId: opId) }

    func commit(_ changes: [OrderChange], entry: JournalEntry) throws {
        let f = fault(.commit)
        if f == .failBefore { return try failInsideTransaction { try store.commit(changes, entry: entry) } }
        let compacted =
            try entry.opId.map { id in
                try history.contains { $0.opId == id } && store.journalEntry(opId: id) == nil
            } ?? false
        try store.commit(changes, entry: entry)
        history.append(entry)
        if compacted, let id = entry.opId { reappliedAfterCompaction.append(id) }
        if f == .failAfter { throw SimStoreError("I/O error (injected after the commit reached the disk)") }
    }

    func appendRejection(_ rejection: Rejection) throws {
        let f = fault(.appendRejection)
        if f == .failBefore {
            lostRejections.append(rejection)
            return try failInsideTransaction { try store.appendRejection(rejection) }
        }
        try store.appendRejection(rejection)
        if f == .failAfter { throw SimStoreError("I/O error (injected after the rejection was stored)") }
    }

    func saveTerminals(_ list: [KnownTerminal]) throws {
        let f = fault(.saveTerminals)
        if f == .failBefore { return try failInsideTransaction { try store.saveTerminals(list) } }
        try store.saveTerminals(list)
        if f == .failAfter { throw SimStoreError("I/O error (injected after the terminals were stored)") }
    }

    func knownTerminals() throws -> [KnownTerminal] { try store.knownTerminals() }
    func forgetTerminals(lastSeenBefore millis: Int64) throws -> Int { try store.forgetTerminals(lastSeenBefore: millis) }
    func compactTombstones(through seq: Int64) throws -> Int { try store.compactTombstones(through: seq) }
    func compactJournal(through seq: Int64, recordedBefore millis: Int64) throws -> Int {
        try store.compactJournal(through: seq, recordedBefore: millis)
    }

    var orders: [String: Order] {
        checkedRead(&readFailures, "all orders", [:]) {
            Dictionary(uniqueKeysWithValues: try store.allOrders().map { ($0.key, $0) })
        }
    }

    func shownOrder(_ key: String) -> Order? {
        checkedRead(&readFailures, "order \(key)", nil) { try store.order(uuid: key) }
    }

    func recordedRejections(opId: String) -> [Rejection] {
        checkedRead(&readFailures, "rejections of \(opId)", []) { try db.rejections(opId: opId) }
    }

    var journalRows: [JournalEntry] {
        checkedRead(&readFailures, "the journal", []) { try store.journal(since: 0, limit: Int(Int32.max)) }
    }

    func crashed() {
        if db.isInTransaction { readFailures.append("a transaction was open when the master crashed") }
    }
}

/// A slave's store on the real adapter (`SQLiteSlaveStore`) over an in-memory SQLite database,
/// with the simulation's faults and crashes as for `SQLiteSimMasterStore`.
final class SQLiteSimSlaveStore: SimSlaveStore {
    let db: OrderDatabase
    private let store: SQLiteSlaveStore
    var faults: (() -> Bool)?
    private(set) var appliedLog: [(seq: Int64, snapshot: Bool)] = []
    private(set) var readFailures: [String] = []

    init() throws {
        db = try OrderDatabase.inMemory()
        store = SQLiteSlaveStore(db: db)
    }

    func order(uuid: String) throws -> Order? { try store.order(uuid: uuid) }
    func outboxEntries() throws -> [OutboxEntry] { try store.outboxEntries() }
    func loadReplicaState() throws -> ReplicaState { try store.loadReplicaState() }
    func answeredOperation(opId: String) throws -> AnsweredOperation? { try store.answeredOperation(opId: opId) }

    func commit(_ c: SlaveCommit) throws {
        if faults?() == true {
            // The disk fills in the middle of the transaction: everything written rolls back.
            try db.transaction {
                try store.commit(c)
                throw SimStoreError("disk full (injected before COMMIT)")
            }
        }
        try store.commit(c)
        if let s = c.lastSeq { appliedLog.append((s, c.replaceAll != nil)) }
    }

    var orders: [String: Order] {
        checkedRead(&readFailures, "all orders", [:]) {
            Dictionary(uniqueKeysWithValues: try store.db.allOrders().map { ($0.key, $0) })
        }
    }

    func shownOrder(_ key: String) -> Order? {
        checkedRead(&readFailures, "order \(key)", nil) { try store.order(uuid: key) }
    }

    var lastSeq: Int64 { checkedRead(&readFailures, "the replica state", 0) { try store.loadReplicaState().lastSeq } }

    var outbox: [OutboxEntry] { checkedRead(&readFailures, "the outbox", []) { try store.outboxEntries() } }

    func recordedRejections(opId: String) -> [Rejection] {
        checkedRead(&readFailures, "rejections of \(opId)", []) { try db.rejections(opId: opId) }
    }

    func crashed() {
        if db.isInTransaction { readFailures.append("a transaction was open when the slave crashed") }
    }
}
