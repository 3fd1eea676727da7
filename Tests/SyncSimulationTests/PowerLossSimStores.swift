import FaultVFS
import OrderStore
import SyncCore

/// One simulated machine's disk for the power-loss runs: a directory whose files go through
/// the fault VFS, a seeded generator of its own (the simulation's stays untouched), and the
/// store's database, reopened after every crash.
///
/// A crash the simulation chooses is, by the seed, a process death (the page cache survives:
/// SIGKILL) or a power cut that drops or tears every write not yet synced. A store call can
/// also be cut by a power failure at one of its first writes (or, on the master, syncs): the
/// call fails, and `crashNode` has the simulation crash the node at once. A fault the
/// simulation injects on a commit becomes a real one below SQLite: EIO or ENOSPC on a write of
/// the commit, or (on the master) EIO on its sync, after which the commit's frames are in the
/// WAL without being acknowledged.
final class SimDisk {
    /// The prefix of every file of this machine.
    let machine: String
    /// The database file.
    let path: String
    private let rng: SimRandom
    /// Faults armed on this machine's commits.
    private(set) var faultsArmed = 0
    /// Power cuts that interrupted a store call.
    private(set) var cutsInCalls = 0
    /// The chance that a store call is cut by a power failure.
    var powerCutChance = 0.0
    /// Whether power cuts in calls may happen now (the simulation's fault phase).
    var faultsActive: () -> Bool = { false }
    /// Crashes this node (schedules its crash on the simulation's clock); nil: no power cuts
    /// in calls.
    var crashNode: (() -> Void)?
    /// The calls a power cut in a call may interrupt.
    let cuttable: FaultVFS.Calls
    /// The power went off in a call and the node has not crashed yet.
    private var powerIsOff = false

    init(directory: String, seed: UInt64, cuttable: FaultVFS.Calls) {
        machine = directory + "/"
        path = directory + "/orders.sqlite"
        rng = SimRandom(seed: seed)
        self.cuttable = cuttable
    }

    /// Opens (or creates) the store.
    func open() throws -> OrderDatabase { try OrderDatabase(path: path) }

    /// Arms one fault for the next call's commit: EIO or ENOSPC on one of its first writes, or
    /// (`sync`) EIO on its sync.
    private func armCommitFault(sync: Bool) {
        faultsArmed += 1
        if sync {
            FaultVFS.arm(.eio, on: .sync, under: machine)
        } else {
            FaultVFS.arm(rng.chance(0.5) ? .eio : .enospc, on: .write, under: machine, nth: rng.int(1...3))
        }
    }

    /// Runs one store call with a fault armed (`fault`), or perhaps a power cut, or neither;
    /// the rule is gone after it, whether the call reached the armed write or not.
    func call<T>(fault: Bool, sync: Bool = false, _ body: () throws -> T) throws -> T {
        let cut = !fault && !powerIsOff && crashNode != nil && faultsActive() && rng.chance(powerCutChance)
        if fault { armCommitFault(sync: sync) }
        if cut {
            FaultVFS.setSeed(rng.next())
            FaultVFS.arm(.powerCut(rng.chance(0.5) ? .drop : .tear), on: cuttable, under: machine, nth: rng.int(1...4))
        }
        let cutsBefore = FaultVFS.counters.powerCuts
        defer {
            if fault || cut { FaultVFS.disarm() }
            if cut, FaultVFS.counters.powerCuts > cutsBefore {
                cutsInCalls += 1
                powerIsOff = true
                crashNode?()
            }
        }
        return try body()
    }

    /// The process dies or the power goes off (by the seed, unless a call's power cut did it
    /// already) with `db` open; the machine comes back and the store is opened again.
    /// Problems go to `failures`.
    func crash(_ db: OrderDatabase, _ failures: inout [String]) -> OrderDatabase {
        let r = rng.unit()
        if powerIsOff {
            powerIsOff = false
        } else if r < 0.4 {
            FaultVFS.kill(under: machine)
        } else {
            FaultVFS.setSeed(rng.next())
            FaultVFS.powerCut(under: machine, r < 0.7 ? .drop : .tear)
        }
        db.close()
        let stillOpen = FaultVFS.powerOn(under: machine)
        if stillOpen > 0 { failures.append("\(stillOpen) handles from before the crash were still open") }
        do {
            return try open()
        } catch {
            // A store that cannot be opened (damaged) is what must never happen here.
            failures.append("the store did not open after the crash: \(error)")
            return db
        }
    }
}

/// The master's store on the real adapter over a file on the fault VFS (see `SimDisk`).
final class PowerLossSimMasterStore: SimMasterStore {
    let disk: SimDisk
    private(set) var db: OrderDatabase
    private var store: SQLiteMasterStore
    var faults: ((MasterStoreCall) -> StoreFault)?
    private(set) var history: [JournalEntry] = []
    private(set) var lostRejections: [Rejection] = []
    private(set) var reappliedAfterCompaction: [String] = []
    private(set) var readFailures: [String] = []

    init(directory: String, seed: UInt64) throws {
        disk = SimDisk(directory: directory, seed: seed, cuttable: [.write, .sync])
        db = try disk.open()
        store = SQLiteMasterStore(db: db)
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
        let f = faults?(.commit) ?? .none
        let compacted =
            try entry.opId.map { id in
                try history.contains { $0.opId == id } && store.journalEntry(opId: id) == nil
            } ?? false
        // "Before": a write of the commit fails. "After": its sync fails, the frames stay in
        // the WAL, and a crash before the next commit brings the entry back (see `reopened`).
        try disk.call(fault: f != .none, sync: f == .failAfter) { try store.commit(changes, entry: entry) }
        history.append(entry)
        if compacted, let id = entry.opId { reappliedAfterCompaction.append(id) }
    }

    func appendRejection(_ rejection: Rejection) throws {
        let fault = faults?(.appendRejection) == .failBefore
        do {
            try disk.call(fault: fault) { try store.appendRejection(rejection) }
        } catch {
            lostRejections.append(rejection)
            throw error
        }
    }

    func saveTerminals(_ list: [KnownTerminal]) throws {
        try disk.call(fault: faults?(.saveTerminals) == .failBefore) { try store.saveTerminals(list) }
    }

    func knownTerminals() throws -> [KnownTerminal] { try store.knownTerminals() }
    func forgetTerminals(lastSeenBefore millis: Int64) throws -> Int { try store.forgetTerminals(lastSeenBefore: millis) }
    func compactTombstones(through seq: Int64) throws -> Int { try store.compactTombstones(through: seq) }
    func compactJournal(through seq: Int64, recordedBefore millis: Int64) throws -> Int {
        try store.compactJournal(through: seq, recordedBefore: millis)
    }

    var orders: [String: Order] {
        read("all orders", [:]) { Dictionary(uniqueKeysWithValues: try store.allOrders().map { ($0.key, $0) }) }
    }

    func shownOrder(_ key: String) -> Order? { read("order \(key)", nil) { try store.order(uuid: key) } }

    func recordedRejections(opId: String) -> [Rejection] { read("rejections of \(opId)", []) { try db.rejections(opId: opId) } }

    var journalRows: [JournalEntry] { read("the journal", []) { try store.journal(since: 0, limit: Int(Int32.max)) } }

    func crashed() {
        if db.isInTransaction { readFailures.append("a transaction was open when the master crashed") }
        db = disk.crash(db, &readFailures)
        store = SQLiteMasterStore(db: db)
        reopened()
    }

    /// Entries the reopened journal has past the last acknowledged one: commits whose sync
    /// failed and whose frames a process death kept (WAL recovery finds them). They are
    /// stored, so they join the history the checker reads; one acknowledged but missing shows
    /// there as a gap.
    private func reopened() {
        let last = history.last?.seq ?? 0
        history += read("the journal after a crash", []) { try store.journal(since: last, limit: Int(Int32.max)) }
    }

    private func read<T>(_ what: String, _ fallback: T, _ body: () throws -> T) -> T {
        checkedRead(&readFailures, what, fallback, body)
    }
}

/// A slave's store on the real adapter over a file on the fault VFS (see `SimDisk`). Its
/// injected faults and power cuts in calls are on writes only (a commit whose last frame was
/// never written cannot come back), so every commit that set a position is in `appliedLog`.
final class PowerLossSimSlaveStore: SimSlaveStore {
    let disk: SimDisk
    private(set) var db: OrderDatabase
    private var store: SQLiteSlaveStore
    var faults: (() -> Bool)?
    private(set) var appliedLog: [(seq: Int64, snapshot: Bool)] = []
    private(set) var readFailures: [String] = []

    init(directory: String, seed: UInt64) throws {
        disk = SimDisk(directory: directory, seed: seed, cuttable: .write)
        db = try disk.open()
        store = SQLiteSlaveStore(db: db)
    }

    func order(uuid: String) throws -> Order? { try store.order(uuid: uuid) }
    func outboxEntries() throws -> [OutboxEntry] { try store.outboxEntries() }
    func loadReplicaState() throws -> ReplicaState { try store.loadReplicaState() }
    func answeredOperation(opId: String) throws -> AnsweredOperation? { try store.answeredOperation(opId: opId) }

    func commit(_ c: SlaveCommit) throws {
        try disk.call(fault: faults?() == true) { try store.commit(c) }
        if let s = c.lastSeq { appliedLog.append((s, c.replaceAll != nil)) }
    }

    var orders: [String: Order] {
        read("all orders", [:]) { Dictionary(uniqueKeysWithValues: try store.db.allOrders().map { ($0.key, $0) }) }
    }

    func shownOrder(_ key: String) -> Order? { read("order \(key)", nil) { try store.order(uuid: key) } }

    var lastSeq: Int64 { read("the replica state", 0) { try store.loadReplicaState().lastSeq } }

    var outbox: [OutboxEntry] { read("the outbox", []) { try store.outboxEntries() } }

    func recordedRejections(opId: String) -> [Rejection] { read("rejections of \(opId)", []) { try db.rejections(opId: opId) } }

    func crashed() {
        if db.isInTransaction { readFailures.append("a transaction was open when the slave crashed") }
        let before = lastSeq
        db = disk.crash(db, &readFailures)
        store = SQLiteSlaveStore(db: db)
        if lastSeq != before { readFailures.append("the replica was at seq \(before) before the crash, \(lastSeq) after") }
    }

    private func read<T>(_ what: String, _ fallback: T, _ body: () throws -> T) -> T {
        checkedRead(&readFailures, what, fallback, body)
    }
}
