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
    /// the group is committed runs as a savepoint inside it.
    public func beginGroup() throws(StoreError) {
        do {
            try requireWritable()
        } catch let error as StoreError {
            throw error
        } catch {
            preconditionFailure("the store throws StoreError only: \(error)")
        }
        precondition(transactionState == .none, "a group cannot start in state \(transactionState)")
        do {
            try connection.execute("BEGIN IMMEDIATE")
        } catch let error as StoreError {
            throw error
        } catch {
            preconditionFailure("the store throws StoreError only: \(error)")
        }
        transactionState.groupBegan()
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
        defer { beforeGroupCommit = [] }
        return DetachedCommit(handle: handle, path: path, before: beforeGroupCommit)
    }

    /// Takes the connection back after `commit.run()` returned; its outcome, for the caller.
    @discardableResult
    public func finishGroupCommit(_ commit: DetachedCommit) -> Result<Void, StoreError> {
        guard let result = commit.result else { preconditionFailure("the COMMIT has not run") }
        connection.isLent = false
        transactionState.commitFinished()
        return result
    }

    /// Ends the group without committing anything of it.
    public func rollbackGroup() {
        guard isInGroup else { return }
        beforeGroupCommit = []
        transactionState.groupRolledBack()
        if !connection.isAutocommit { _ = try? connection.execute("ROLLBACK") }
    }

    /// Commits the group on the calling thread (tests, and callers without a commit thread).
    public func commitGroup() throws(StoreError) {
        let commit = try detachGroupCommit()
        commit.run()
        if case .failure(let error) = finishGroupCommit(commit) { throw error }
    }
}
