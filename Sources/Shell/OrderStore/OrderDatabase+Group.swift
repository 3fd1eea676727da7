/// Group commit: many operations in one transaction, committed with one `fsync` on another
/// thread (Docs/ARCHITECTURE.md, "The master's hot path").
///
///     try db.beginGroup()
///     ... store.commit(...) for each operation (each one a savepoint inside the group) ...
///     let commit = try db.detachGroupCommit()
///     queue.async { commit.run(); loop.execute { ... commit.error ... } }
///
/// Between `detachGroupCommit()` and the end of `run()`, any use of the database on the
/// owner's thread waits for the COMMIT, so it never sees a half-committed group.
extension OrderDatabase {
    /// True between `beginGroup()` and `detachGroupCommit()` (or `rollbackGroup()`).
    public var isInGroup: Bool { transactionDepth > 0 && groupOpen }

    /// Opens the group's write transaction (`BEGIN IMMEDIATE`); every `transaction` call until
    /// the group is committed runs as a savepoint inside it.
    public func beginGroup() throws {
        try requireWritable()
        precondition(transactionDepth == 0, "a group cannot start inside a transaction")
        try connection.execute("BEGIN IMMEDIATE")
        transactionDepth = 1
        groupOpen = true
    }

    /// Closes the group and hands its COMMIT to the caller, to `run()` on another thread.
    /// When SQLite already rolled the transaction back (a failed statement such as
    /// SQLITE_FULL), the returned commit reports that as its error.
    public func detachGroupCommit() throws -> DetachedCommit {
        precondition(isInGroup, "no group is open")
        transactionDepth = 0
        groupOpen = false
        let handle = try connection.openHandle()
        let commit = DetachedCommit(handle: handle, path: path)
        connection.commitInFlight = commit
        return commit
    }

    /// Ends the group without committing anything of it.
    public func rollbackGroup() {
        guard isInGroup else { return }
        transactionDepth = 0
        groupOpen = false
        if !connection.isAutocommit { _ = try? connection.execute("ROLLBACK") }
    }

    /// Waits for a detached COMMIT still running (nothing when none is).
    public func waitForCommit() { connection.settle() }

    /// Commits the group on the calling thread (tests, and callers without a commit thread).
    public func commitGroup() throws {
        let commit = try detachGroupCommit()
        commit.run()
        connection.settle()
        if let error = commit.error { throw error }
    }
}
