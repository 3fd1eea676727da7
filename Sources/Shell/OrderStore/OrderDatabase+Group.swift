/// Group commit: many operations in one transaction, committed with one `fsync` on another
/// thread (Docs/ARCHITECTURE.md, "The master's hot path").
///
///     try db.beginGroup()
///     ... store.commit(...) for each operation (each one a savepoint inside the group) ...
///     let commit = try db.detachGroupCommit()
///     queue.async { commit.run(); loop.execute { db.finishGroupCommit(commit) ... } }
///
/// Between `detachGroupCommit()` and `finishGroupCommit(_:)` the connection belongs to the
/// COMMIT: the owner does not use it (it traps if it does; nothing waits), and reads of what
/// is committed go to another connection meanwhile.
extension OrderDatabase {
    /// True between `beginGroup()` and `detachGroupCommit()` (or `rollbackGroup()`).
    public var isInGroup: Bool { transactionState.isGroupOpen }

    /// True between `detachGroupCommit()` and `finishGroupCommit(_:)`.
    public var isCommitting: Bool { transactionState == .committing }

    /// Opens the group's write transaction (`BEGIN IMMEDIATE`); every `transaction` call until
    /// the group is committed runs as a savepoint inside it. `synchronous` is how its COMMIT
    /// reaches the disk: `.full` (every group but one that only stages a snapshot's parts) syncs
    /// the log before the COMMIT returns; `.normal` does not (`SynchronousLevel`).
    public func beginGroup(synchronous: SynchronousLevel = .full) throws(StoreError) {
        do {
            try requireWritable()
        } catch let error as StoreError {
            throw error
        } catch {
            preconditionFailure("the store throws StoreError only: \(error)")
        }
        precondition(transactionState == .none, "a group cannot start in state \(transactionState)")
        do {
            // "Safety level may not be changed inside a transaction": set before the BEGIN.
            if self.synchronous != synchronous { try setSynchronous(synchronous) }
            try connection.execute("BEGIN IMMEDIATE")
        } catch let error as StoreError {
            restoreFullSynchronous()
            throw error
        } catch {
            preconditionFailure("the store throws StoreError only: \(error)")
        }
        transactionState.groupBegan()
    }

    /// Sets `PRAGMA synchronous` (outside any transaction) and reads back what SQLite now uses.
    private func setSynchronous(_ level: SynchronousLevel) throws {
        try connection.executeOnce("PRAGMA synchronous = \(level.rawValue)")
        let now = try connection.scalarInt("PRAGMA synchronous")
        guard let now, let read = SynchronousLevel(rawValue: Int(now)) else {
            throw StoreError(kind: .sqlite, message: "PRAGMA synchronous reads \(now.map(String.init) ?? "nothing")", path: path)
        }
        synchronous = read
    }

    /// After a group that did not commit with FULL: the connection goes back to FULL, so that
    /// every other transaction (groups, writes outside them) syncs its COMMIT as before.
    private func restoreFullSynchronous() {
        guard synchronous != .full, connection.isAutocommit else { return }
        do {
            try setSynchronous(.full)
        } catch {
            preconditionFailure("the store could not go back to synchronous=FULL: \(error)")
        }
        precondition(synchronous == .full, "synchronous=FULL did not take")
    }

    /// Closes the group and hands its COMMIT to the caller, to `run()` on another thread and
    /// give back with `finishGroupCommit(_:)`. When SQLite already rolled the transaction back
    /// (a failed statement such as SQLITE_FULL), the commit reports that as its error.
    public func detachGroupCommit() throws(StoreError) -> DetachedCommit {
        precondition(isInGroup, "no group is open")
        let handle: OpaquePointer
        do {
            handle = try connection.openHandle()
        } catch let error as StoreError {
            throw error
        } catch {
            preconditionFailure("the store throws StoreError only: \(error)")
        }
        transactionState.groupDetached()
        connection.isLent = true
        defer {
            beforeGroupCommit = []
            groupFailure = nil
        }
        return DetachedCommit(
            handle: handle, path: path, before: beforeGroupCommit, failure: groupFailure, pages: walPageCount,
            synchronous: synchronous)
    }

    /// Runs `body`, one operation's writes, straight in the open group's transaction, with no
    /// savepoint of its own; outside a group (or nested) it is `transaction(body)`.
    ///
    /// A savepoint per operation let one operation fail alone inside its group, at about a
    /// quarter of SQLite's work per operation (every page the operation touches is copied to
    /// the savepoint's journal first; Docs/PERFORMANCE.md, "Where an operation's instructions
    /// go"). The master checks an operation before it writes (`OperationPlanner`, repeated
    /// operation ids), so what fails here is the store itself (a full disk, an I/O error).
    /// Then the whole group goes, as when its COMMIT fails: everything of it is rolled back at
    /// once, a new transaction takes the rest of the group's writes (so none runs outside a
    /// transaction), every later `groupWrite` of the group throws the same error, and the
    /// group's COMMIT rolls back and reports it. Nothing of the group stays; its operations
    /// are refused with `storage_failed` (`MasterEngine.groupFailed`).
    public func groupWrite<T>(_ body: () throws -> T) throws -> T {
        guard case .group(depth: 1) = transactionState else { return try transaction(body) }
        if let groupFailure { throw groupFailure }
        guard !connection.isAutocommit else {
            // SQLite already rolled the group back (SQLITE_FULL, ...): never write outside it.
            let failure = StoreError(
                kind: .sqlite, message: "the enclosing transaction was already rolled back by SQLite", path: path)
            groupFailure = failure
            throw failure
        }
        do {
            return try body()
        } catch {
            groupFailure =
                (error as? StoreError)
                ?? StoreError(kind: .sqlite, message: "a write of the group failed: \(error)", path: path)
            if !connection.isAutocommit { _ = try? connection.execute("ROLLBACK") }
            _ = try? connection.execute("BEGIN IMMEDIATE")
            throw error
        }
    }

    /// True when a `groupWrite` of the open group failed: the group will not commit.
    var groupHasFailed: Bool { groupFailure != nil }

    /// Takes the connection back after `commit.run()` returned; its outcome, for the caller.
    @discardableResult
    public func finishGroupCommit(_ commit: DetachedCommit) -> Result<Void, StoreError> {
        guard let result = commit.result else { preconditionFailure("the COMMIT has not run") }
        connection.isLent = false
        transactionState.commitFinished()
        restoreFullSynchronous()
        return result
    }

    /// Ends the group without committing anything of it.
    public func rollbackGroup() {
        guard isInGroup else { return }
        beforeGroupCommit = []
        groupFailure = nil
        transactionState.groupRolledBack()
        if !connection.isAutocommit { _ = try? connection.execute("ROLLBACK") }
        restoreFullSynchronous()
    }

    /// Commits the group on the calling thread (tests, and callers without a commit thread).
    public func commitGroup() throws(StoreError) {
        let commit = try detachGroupCommit()
        commit.run()
        if case .failure(let error) = finishGroupCommit(commit) { throw error }
    }
}
