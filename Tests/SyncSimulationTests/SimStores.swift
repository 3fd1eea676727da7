import SyncCore

/// The master's store as the simulation uses it: what the engine needs (`MasterStore`), the
/// faults the simulation injects, and what the checker reads. In memory (`InMemoryMasterStore`)
/// or on an in-memory SQLite database (`SQLiteSimMasterStore`).
protocol SimMasterStore: MasterStore {
    /// Decides, per call, whether it fails (set by the simulation; nil: never).
    var faults: ((MasterStoreCall) -> StoreFault)? { get set }
    /// Every order, by key.
    var orders: [String: Order] { get }
    /// The order with `key` (lower-case UUID), or nil.
    func shownOrder(_ key: String) -> Order?
    /// Every journal entry ever stored, compacted or not, in the order stored.
    var history: [JournalEntry] { get }
    /// The journal entries still stored, by seq.
    var journalRows: [JournalEntry] { get }
    /// The refusals recorded for operation `opId` (what is stored, whatever the engine's
    /// lookups see).
    func recordedRejections(opId: String) -> [Rejection]
    /// Rejections that could not be recorded (injected failures).
    var lostRejections: [Rejection] { get }
    /// Operation ids journalled again after their first entry had been compacted away.
    var reappliedAfterCompaction: [String] { get }
    /// Why reading the store for the checker failed, if it ever did.
    var readFailures: [String] { get }
    /// The master's process died: what was committed stays, nothing else.
    func crashed()
}

/// A slave's store as the simulation uses it (see `SimMasterStore`).
protocol SimSlaveStore: SlaveStore {
    /// Decides whether the next commit fails (nil: never).
    var faults: (() -> Bool)? { get set }
    /// Every order of the replica, by key.
    var orders: [String: Order] { get }
    /// The replica's order with `key` (lower-case UUID), or nil.
    func shownOrder(_ key: String) -> Order?
    /// The replica's position.
    var lastSeq: Int64 { get }
    /// The outbox, oldest first.
    var outbox: [OutboxEntry] { get }
    /// The refusals recorded for operation `opId`.
    func recordedRejections(opId: String) -> [Rejection]
    /// The position set by each commit that set one, in commit order, across crashes.
    var appliedLog: [(seq: Int64, snapshot: Bool)] { get }
    /// Why reading the store for the checker failed, if it ever did.
    var readFailures: [String] { get }
    /// The node's process died: what was committed stays (a broken store may lose more).
    func crashed()
}

extension InMemoryMasterStore: SimMasterStore {
    func shownOrder(_ key: String) -> Order? { orders[key] }

    func recordedRejections(opId: String) -> [Rejection] { rejectionRows.filter { $0.opId == opId } }

    var readFailures: [String] { [] }

    /// Everything stored is on "disk": nothing is lost.
    func crashed() {}
}

extension InMemorySlaveStore: SimSlaveStore {
    func shownOrder(_ key: String) -> Order? { orders[key] }

    func recordedRejections(opId: String) -> [Rejection] { rejections.filter { $0.opId == opId } }

    var readFailures: [String] { [] }
}
