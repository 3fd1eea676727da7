import Dispatch
import EventLoopIO
import NodePolicy
import OrderStore

/// The node's one writer of its order store, for both roles: the only holder of the read-write
/// `OrderDatabase` (GRDB's `SerializedDatabase`; Docs/ARCHITECTURE.md, "The master's hot
/// path"). Loop-owned: every method is called on the node's loop.
///
/// **Group commit.** A role opens a group (`openGroup()`), applies work in it during this loop
/// turn (`collect`; the engines' store adapters are used there), and hands it to `commit(_:)`:
/// the COMMIT and its `fsync` run on the commit thread while the loop goes on; the role is told
/// on the loop, with a typed `Result`, once the group is on disk or failed, and releases what
/// the engine answered only then. Work that arrives during a commit waits in the role's queue
/// for the next group, in arrival order.
///
/// **Reads never wait on a commit.** `read` runs its closure on the read-write connection while
/// no COMMIT is in flight; during one, on a second, read-only connection (WAL: "readers do not
/// block writers and a writer does not block readers"), which sees what is committed: not the
/// group being committed, whose answers have not left yet either. Nothing waits on a lock.
///
/// **Writes outside a group** (`write(_:then:)`) are groups of their own, committed off the
/// loop too, their callers told once on disk. **Work that must see the last group** (a
/// slave's local API, its link events) goes through `whenIdle`: run at once when no group is
/// open or committing, or else queued, in order, and run on the loop right after the commit in
/// flight is handed back (or the log's checkpoint it waits for ended). Only at shutdown does
/// anything wait for a commit: `waitForCommitAtShutdown()`; only at start (`identity`) and at
/// shutdown (`commitAtShutdown()`) does a write commit in place.
final class StoreWriter {
    /// What a write outside the groups does with the store, in the group the writer opens for it.
    typealias WriteBody<T> = (OrderDatabase) throws -> T

    /// The read-write connection.
    private let database: OrderDatabase
    /// The read-only connection for reads during a commit (opened on first need).
    private var reader: OrderDatabase?
    /// The loop that owns the writer.
    let loop: EventLoop
    /// The thread the groups' COMMITs (and their `fsync`) run on.
    private let commitQueue: DispatchQueue
    private var state = StoreWriterState()
    /// Work waiting for the store to be idle (`whenIdle`), in arrival order.
    private var idleWaiters: [() -> Void] = []
    /// True while a finished commit is handed back (its callback and then the waiters run).
    private var handingBack = false
    /// The reads of many rows, pinned on the loop and run off it (`OffLoopReads`).
    let offLoopReads: OffLoopReads
    /// Whether the last commit succeeded, or the streak of failed ones (`StoreWriter+Health`).
    var health = StoreHealth()
    /// The failing store's recovery probe (`StoreWriter+Health`).
    var probe = StoreProbe()
    /// When true, each group's commit thread notes when it took the COMMIT and when the
    /// COMMIT returned (`lastCommitStamps`; the master's stage trace). Off, no clock is read.
    var stampsCommits = false
    /// The last group's commit thread: when it began the COMMIT and when it returned.
    private(set) var lastCommitStamps: (began: MonotonicInstant, ended: MonotonicInstant)?
    /// The log's checkpoints, run on the commit thread after a group's answers left instead of
    /// inside its COMMIT (`WALCheckpointer`; nil for a store in memory).
    private var checkpointer: WALCheckpointer?
    /// How many times in a row a log truncation that found a group or a reader in the way is
    /// tried again, a second apart (`truncateLogIfQuiet`).
    static let truncationRetries = 10
    /// A checkpoint is queued or running on the commit thread.
    private var checkpointQueued = false
    /// The most pages a log may hold for its checkpoint to run before the next group opens
    /// (`holdsGroupsForCheckpoint`); a larger one (the whole store after a slave's snapshot
    /// switch) runs behind the next group, which must not wait for that copy.
    static let checkpointFirstPages = 2 * WALCheckpointer.thresholdPages
    /// True from the COMMIT that filled the log until its checkpoint ended: the next group waits
    /// (`whenIdle`) so that it begins with the whole log checkpointed, and SQLite writes the log
    /// over from its beginning (wal.c `walRestartLog`); begun during the checkpoint, it and every
    /// group after it grew the file instead, whose `fdatasync` then also writes the inode
    /// (Docs/PERFORMANCE.md, "The log written over, not grown").
    private(set) var holdsGroupsForCheckpoint = false
    /// A group may open now: none is open or committing, and none waits for the checkpoint.
    private var mayOpenGroup: Bool { state.phase == .idle && !holdsGroupsForCheckpoint }
    /// The timer that empties a log left past its limit once the store has gone quiet
    /// (`truncateLogIfQuiet`).
    private var truncationTimer: TimerHandle?
    /// The checkpoints run so far and the last one's outcome (`StoreWriter+Checkpoints`).
    private(set) var checkpoints = CheckpointCount()
    /// The groups committed off the loop so far, by the `synchronous` their COMMIT ran with.
    private(set) var commitsBySynchronous: [SynchronousLevel: Int] = [:]
    private var committedGroups: Int { commitsBySynchronous.values.reduce(0, +) }

    /// The writer of `store` (the node's, open read-write), owned by `loop`; its COMMITs run on
    /// `commitQueue` (a serial queue of its own unless a test hands one in).
    convenience init(store: NodeStore, loop: EventLoop, label: String, commitQueue: DispatchQueue? = nil) {
        self.init(database: store.database, loop: loop, label: label, commitQueue: commitQueue)
    }

    /// The writer of `database`, owned by `loop` (tests build one on a database of their own, and
    /// may hand in the queues its COMMITs and its off-loop reads run on).
    init(database: OrderDatabase, loop: EventLoop, label: String, commitQueue: DispatchQueue? = nil, readQueue: DispatchQueue? = nil) {
        self.database = database
        self.loop = loop
        self.commitQueue = commitQueue ?? DispatchQueue(label: "ordersync.\(label).commit")
        self.offLoopReads = OffLoopReads(loop: loop, label: label, queue: readQueue)
        self.checkpointer = WALCheckpointer(deferringFor: database)
    }

    /// Where the writer is in its group commit.
    var phase: StoreWriterState.Phase { state.phase }

    /// True while a group's COMMIT runs off the loop.
    var isCommitting: Bool { state.phase == .committing }

    /// True when the open group switches the replica to a staged snapshot at its COMMIT
    /// (`OrderDatabase.switchAtGroupCommit()`): nothing else may write the replica in it.
    var switchesAtCommit: Bool { database.switchesAtGroupCommit }

    /// The database file.
    var path: String { database.path }

    // MARK: - Group commit

    /// Opens a group (`BEGIN IMMEDIATE`): idle to collecting. Throws when the store takes no
    /// transaction (busy, closed): the role then applies its work alone. `synchronous`: FULL
    /// for every group but a slave's batch of staged snapshot parts (`SlaveBatch`).
    func openGroup(synchronous: SynchronousLevel = .full) throws(StoreError) {
        precondition(state.phase == .idle, "a group opened while \(state.phase)")
        do {
            try database.beginGroup(synchronous: synchronous)
        } catch {
            noteCommit(.failure(error))
            throw error
        }
        state.opened()
    }

    /// Runs `body` with the connection inside the open group (collecting only).
    func collect<T>(_ body: (OrderDatabase) throws -> T) rethrows -> T {
        precondition(state.phase == .collecting, "work applied outside a group (\(state.phase))")
        return try body(database)
    }

    /// Commits the open group off the loop: collecting to committing. `finished` runs on the
    /// loop once the group is on disk (`.success`) or failed (its `StoreError`; nothing of it
    /// stays); then what waits in `whenIdle` runs. When the COMMIT cannot even be handed off,
    /// the group is rolled back and `finished` runs at once with the error.
    func commit(_ finished: @escaping (Result<Void, StoreError>) -> Void) {
        let commit: DetachedCommit
        do {
            commit = try database.detachGroupCommit()
        } catch {
            database.rollbackGroup()
            state.rolledBack()
            noteCommit(.failure(error))
            handBack { finished(.failure(error)) }
            return
        }
        state.detached(commit, finished: finished)
        let writer = LoopBound(self, loop: loop)
        let loop = self.loop
        let stamps = stampsCommits
        commitQueue.async {
            let began: MonotonicInstant? = stamps ? .now : nil
            commit.run()
            let ended: MonotonicInstant? = stamps ? .now : nil
            loop.execute {
                if let began, let ended { writer.value.lastCommitStamps = (began, ended) }
                writer.value.commitEnded(commit)
            }
        }
    }

    /// Drops the open group without committing it: collecting to idle.
    func rollbackGroup() {
        database.rollbackGroup()
        state.rolledBack()
    }

    /// The commit thread is done with `commit` (on the loop): the connection comes back, and the
    /// role is told.
    private func commitEnded(_ commit: DetachedCommit) {
        guard let finished = state.commitEnded(commit) else { return }
        let result = database.finishGroupCommit(commit)
        commitsBySynchronous[commit.synchronous, default: 0] += 1
        noteCommit(result)
        // A log past the threshold is checkpointed once the group's answers have left, in the
        // loop's next turn; the next group waits for it (`holdsGroupsForCheckpoint`) unless the
        // log is larger (a slave's snapshot switch: its `ready` must not wait for that copy) or
        // the last checkpoint could not copy everything (a reader's older view).
        let due = (commit.walPages ?? 0) >= WALCheckpointer.thresholdPages && checkpointer != nil
        if due, !checkpointQueued, (commit.walPages ?? 0) <= Self.checkpointFirstPages, checkpoints.lastCopiedAll {
            holdsGroupsForCheckpoint = true
        }
        handBack { finished(result) }
        if due { loop.runSoon { [weak self] in self?.checkpointSoon() } }
    }

    /// Queues a checkpoint of the log on the commit thread (one at a time).
    private func checkpointSoon() {
        guard let checkpointer, !checkpointQueued else { return }
        onCommitThread(checkpointer.run) { writer, outcome in
            writer.checkpoints.note(outcome)
            writer.truncateLogIfQuiet(after: outcome)
        }
    }

    /// Runs `work` on the commit thread, between COMMITs (one such job at a time:
    /// `checkpointQueued`), then `finished` with its result on the loop.
    private func onCommitThread<T: Sendable>(
        _ work: @escaping @Sendable () -> T, then finished: @escaping (StoreWriter, T) -> Void
    ) {
        checkpointQueued = true
        let writer = LoopBound((self, finished), loop: loop)
        let loop = self.loop
        commitQueue.async {
            let result = work()
            loop.execute {
                let (writer, finished) = writer.value
                writer.checkpointQueued = false
                finished(writer, result)
                // The work that waited for the checkpoint (the next group) goes on.
                guard writer.holdsGroupsForCheckpoint, !writer.checkpointQueued else { return }
                writer.holdsGroupsForCheckpoint = false
                writer.handBack {}
            }
        }
    }

    /// After a checkpoint of a log that held pages: empties a log left past its limit
    /// (`WALCheckpointer.truncateLog`) once the store has gone quiet, a second with no COMMIT.
    /// Under traffic the log starts over at the next group's COMMIT, where `journal_size_limit`
    /// cuts a larger file back to `WALCheckpointer.logSizeLimit`, written over from then on;
    /// emptied between groups, the file would instead grow again with every COMMIT until the
    /// next checkpoint. A truncation that finds a group or a reader in the way is a no-op, never
    /// a wait on the commit thread, and is tried again a second later (up to
    /// `truncationRetries` times in a row): an idle node would otherwise keep the grown log
    /// until its next write.
    private func truncateLogIfQuiet(after outcome: Result<WALCheckpointer.Outcome, StoreError>) {
        guard case .success(let done) = outcome, done.logPages > 0, truncationTimer == nil else { return }
        armTruncationTimer()
    }

    private func armTruncationTimer() {
        let committed = committedGroups
        truncationTimer = loop.schedule(after: .seconds(1)) { [weak self] in
            guard let self else { return }
            self.truncationTimer = nil
            // Groups committed meanwhile: not quiet yet.
            guard self.committedGroups == committed else { return self.armTruncationTimer() }
            guard let checkpointer = self.checkpointer, self.state.phase == .idle, !self.checkpointQueued else {
                return self.retryTruncation(.success(.busy))
            }
            self.onCommitThread({ checkpointer.truncateLog() }) { writer, truncated in writer.retryTruncation(truncated) }
        }
    }

    /// Notes how a truncation went; when something was in its way, tries again in a second.
    private func retryTruncation(_ truncated: Result<WALCheckpointer.Truncation, StoreError>) {
        checkpoints.noteTruncation(truncated)
        guard case .success(.busy) = truncated, checkpoints.busyTruncations <= Self.truncationRetries,
            truncationTimer == nil
        else { return }
        armTruncationTimer()
    }

    /// Runs `callback` (the store idle), then the work that waited for the store, in order,
    /// until one of them opens a group again.
    private func handBack(_ callback: () -> Void) {
        // A group that fails at once inside the callback hands back again, nested.
        let outer = handingBack
        handingBack = true
        defer { handingBack = outer }
        callback()
        while mayOpenGroup, !idleWaiters.isEmpty {
            let next = idleWaiters.removeFirst()
            next()
        }
    }

    /// Runs `body` on the loop once the store is idle and everything queued before it ran: at
    /// once when it already is, else right after the group collecting or committing now is
    /// handed back, or the checkpoint the next group waits for ended (`holdsGroupsForCheckpoint`).
    func whenIdle(_ body: @escaping () -> Void) {
        if mayOpenGroup, !handingBack, idleWaiters.isEmpty {
            body()
        } else {
            idleWaiters.append(body)
        }
    }

    // MARK: - Reads and writes

    /// Runs `body` with a connection that shows what is committed (and, while collecting, the
    /// open group). Never waits for a commit: during one, a read-only connection serves it.
    func read<T>(_ body: (OrderDatabase) throws -> T) throws -> T {
        guard state.phase == .committing else { return try body(database) }
        if reader == nil { reader = try OrderDatabase.openReader(of: database) }
        guard let reader else { preconditionFailure("the reader was just opened") }
        return try body(reader)
    }

    /// Runs `body` off the loop on a reader connection, inside a read transaction begun now (it
    /// sees what `read` would show now, but for an open group); `finished` gets its value on the
    /// loop. For reads of many rows (`OffLoopReads`).
    func readOffLoop<T: Sendable>(
        _ body: @escaping @Sendable (OrderDatabase) throws -> T, then finished: @escaping (Result<T, any Error>) -> Void
    ) {
        offLoopReads.read(self, body, then: finished)
    }

    /// A write outside the roles' groups (a pairing, a revocation, a dashboard token, a slave's
    /// kept API answer): `body` runs in a group of its own, opened at once when the store is
    /// idle or else once it is (after the work queued before it, or the log's checkpoint the
    /// next group waits for: `holdsGroupsForCheckpoint`), and its COMMIT runs off the
    /// loop like any group's. `finished` runs on the loop once it is on disk, with `body`'s
    /// value, or with the error (the store took no transaction, `body` threw, or the COMMIT
    /// failed: nothing of it stays). Nothing commits on the loop.
    func write<T>(_ body: @escaping WriteBody<T>, then finished: @escaping (Result<T, any Error>) -> Void) {
        let run = { [self] in
            do {
                try openGroup()
            } catch {
                finished(.failure(error))
                return
            }
            let value: T
            do {
                value = try collect(body)
            } catch {
                rollbackGroup()
                finished(.failure(error))
                return
            }
            commit { result in finished(result.map { value }.mapError { $0 }) }
        }
        // Idle while work that waited runs (`handBack`): the caller is that work, so it goes now.
        if mayOpenGroup { run() } else { whenIdle(run) }
    }

    /// Reads a metadata value, creating it with `make()` the first time (a node's identity).
    /// At start only, before the loop runs: the one write that commits in place besides
    /// `commitAtShutdown()`.
    func identity(key: String, make: () -> String) throws -> String {
        precondition(state.phase == .idle, "the identity is made at start, the store idle")
        if let v = try database.metadata(key) { return v }
        let v = make()
        try database.setMetadata(key, v)
        return v
    }

    /// The master engine's store, on the read-write connection (used while collecting).
    func masterStore() -> SQLiteMasterStore { SQLiteMasterStore(db: database) }

    /// The slave engine's store, on the read-write connection (used while collecting).
    func slaveStore() -> SQLiteSlaveStore { SQLiteSlaveStore(db: database) }

    // MARK: - Shutdown

    /// At shutdown, on the loop's thread after the loop stopped: waits (explicitly, the one
    /// wait there is) for the COMMIT in flight and takes the connection back. Its outcome is
    /// returned; nobody else is told (the links are closed).
    @discardableResult
    func waitForCommitAtShutdown() -> Result<Void, StoreError>? {
        guard let commit = state.inFlight else { return nil }
        commitQueue.sync {}
        _ = state.commitEnded(commit)
        idleWaiters.removeAll()
        return database.finishGroupCommit(commit)
    }

    /// Between two roles of a node (a hand-over: the old role finished, the next not built
    /// yet, the store idle): runs `body` in a group committed on this thread, as at start.
    func writeBetweenRoles<T>(_ body: WriteBody<T>) throws -> T {
        precondition(state.phase == .idle, "a write between roles while \(state.phase)")
        try openGroup()
        do {
            let value = try collect(body)
            try commitAtShutdown()
            return value
        } catch {
            if state.phase == .collecting { rollbackGroup() }
            throw error
        }
    }

    /// At shutdown: commits the open group on this thread (the loop has stopped).
    func commitAtShutdown() throws(StoreError) {
        precondition(state.phase == .collecting, "no group to commit (\(state.phase))")
        defer { state.committedInPlace() }
        try database.commitGroup()
    }

    /// Closes the reader (the read-write connection belongs to the data directory, which
    /// closes it).
    func close() {
        if let timer = probe.stop() { loop.cancel(timer) }
        if let timer = truncationTimer { loop.cancel(timer) }
        truncationTimer = nil
        reader?.close()
        reader = nil
        if let checkpointer {
            commitQueue.sync { checkpointer.close() }
            self.checkpointer = nil
        }
    }
}
