import OrderStore

@testable import SyncCore

/// A deliberate bug for the engine failover checker's self-tests.
enum EngineFailoverMutation: String, CaseIterable {
    /// A slave told `diverged` re-queues nothing: its store hands the engine no standby tail
    /// (the entries still leave the journal).
    case dropRequeuedTail
    /// A candidate that should fetch a voter's tail becomes master without it.
    case skipFetch
    /// A voter promises every member candidate of its term or a later one, and candidates bid
    /// the `+1` term of earlier versions rather than a ballot they own (two candidates of one
    /// term may both win; with owned ballots no two share a term).
    case grantEveryPromise
}

/// The slave adapter the node uses (`SQLiteSlaveStore`) over a node's database; with
/// `dropRequeuedTail` its standby tail reads as empty.
final class EngineFailoverSlaveStore: SlaveStore {
    private let store: SQLiteSlaveStore
    private let mutation: EngineFailoverMutation?

    init(db: OrderDatabase, mutation: EngineFailoverMutation?) {
        store = SQLiteSlaveStore(db: db)
        self.mutation = mutation
    }

    func order(uuid: String) throws -> Order? { try store.order(uuid: uuid) }
    func loadReplicaState() throws -> ReplicaState { try store.loadReplicaState() }
    func outboxEntries() throws -> [OutboxEntry] { try store.outboxEntries() }
    func answeredOperation(opId: String) throws -> AnsweredOperation? { try store.answeredOperation(opId: opId) }
    func commit(_ commit: SlaveCommit) throws { try store.commit(commit) }

    func standbyJournal(after seq: Int64) throws -> [JournalEntry] {
        mutation == .dropRequeuedTail ? [] : try store.standbyJournal(after: seq)
    }
}
