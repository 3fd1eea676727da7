internal import CSQLite3

/// The COMMIT of a group of changes, run on a thread other than the connection's owner so
/// that the owner's loop keeps serving sockets and timers during the `fsync`.
///
/// Made by `OrderDatabase.detachGroupCommit()`; `run()` is called once, on the committing
/// thread, and returns how the COMMIT went. Nothing waits for it: the owner hands the result
/// back with `OrderDatabase.finishGroupCommit(_:)` once `run()` returned (a node hops onto its
/// loop with `loop.execute`), and until then does not use the connection (it traps if it
/// does), so SQLite is never called on two threads at once.
// @unchecked Sendable: the handle is used by `run()` only, on the committing thread, while the
// owner keeps off the connection (`SQLiteConnection.isLent`); the value goes back to the owner
// only after `run()` returned (a happens-before edge given by the hop that carries it).
public final class DetachedCommit: @unchecked Sendable {
    private let handle: OpaquePointer
    private let path: String
    /// Statements of the group run before its COMMIT (a staged snapshot's switch).
    private let before: [String]
    /// How `run()` went: nil before it ran.
    public private(set) var result: Result<Void, StoreError>?
    /// A write of the group that failed (`OrderDatabase.groupWrite`): the group is rolled back
    /// instead of committed, and this is its outcome.
    private let failure: StoreError?
    /// Where the connection notes the log's pages at its COMMITs (`WALCheckpointer`).
    private let pages: WALPageCount?
    /// The log's pages once this COMMIT wrote to it, when a `WALCheckpointer` counts them (nil:
    /// not counted, or nothing written): the owner's cue for a checkpoint.
    public private(set) var walPages: Int?
    /// The connection's `PRAGMA synchronous` for this COMMIT (as SQLite read it back when the
    /// group began): FULL syncs the log before `run()` returns, NORMAL does not.
    public let synchronous: SynchronousLevel

    init(
        handle: OpaquePointer, path: String, before: [String] = [], failure: StoreError? = nil,
        pages: WALPageCount? = nil, synchronous: SynchronousLevel = .full
    ) {
        self.handle = handle
        self.path = path
        self.before = before
        self.failure = failure
        self.pages = pages
        self.synchronous = synchronous
    }

    /// Runs the statements kept for the group's end (a staged snapshot's switch), then commits
    /// (with the connection's `synchronous` setting: FULL syncs the WAL before returning) or,
    /// when either fails, rolls the transaction back so nothing of the group
    /// stays. Call once, on the committing thread.
    @discardableResult
    public func run() -> Result<Void, StoreError> {
        precondition(result == nil, "a group's COMMIT runs once")
        if let failure {
            if sqlite3_get_autocommit(handle) == 0 { _ = sqlite3_exec(handle, "ROLLBACK", nil, nil, nil) }
            result = .failure(failure)
            return .failure(failure)
        }
        var outcome = Result<Void, StoreError>.success(())
        var failed: (rc: Int32, sql: String)?
        for sql in before where failed == nil {
            let rc = sqlite3_exec(handle, sql, nil, nil, nil)
            if rc != SQLITE_OK { failed = (rc, sql) }
        }
        if failed == nil {
            pages?.pages = nil
            let rc = sqlite3_exec(handle, "COMMIT", nil, nil, nil)
            if rc != SQLITE_OK { failed = (rc, "COMMIT") }
            walPages = pages?.pages
        }
        if let (rc, sql) = failed {
            outcome = .failure(SQLiteConnection.error(rc: rc, db: handle, sql: sql, path: path))
            // "If certain kinds of errors occur ... the transaction might be rolled back
            // automatically"; otherwise it is still open and is rolled back here.
            if sqlite3_get_autocommit(handle) == 0 { _ = sqlite3_exec(handle, "ROLLBACK", nil, nil, nil) }
        }
        result = outcome
        return outcome
    }

    /// How the COMMIT went: nil when it committed (read after `run()` returned).
    public var error: StoreError? {
        guard let result else { preconditionFailure("the COMMIT has not run") }
        if case .failure(let error) = result { return error }
        return nil
    }
}

/// How a transaction's COMMIT reaches the disk in WAL mode (`PRAGMA synchronous`, whose values
/// these are). sqlite.org/pragma.html: "With synchronous=FULL in WAL mode, an additional sync
/// operation of the WAL file happens after each transaction commit"; with NORMAL "the WAL file
/// is synchronized before each checkpoint ... but no sync operations occur during most
/// transactions", and "WAL mode is always consistent with synchronous=NORMAL, but WAL mode does
/// lose durability. A transaction committed in WAL mode with synchronous=NORMAL might roll back
/// following a power loss or system crash."
///
/// Every transaction of a store commits with FULL (what is acknowledged is on disk) but a
/// group that holds nothing but staged snapshot rows (Docs/PROTOCOL.md 4.2.3), which nothing
/// acknowledges and nothing reads after a restart: it commits with NORMAL. The sync of the
/// next FULL COMMIT covers the log's frames written before it, so the switch (FULL) makes the
/// whole staged snapshot durable with itself.
public enum SynchronousLevel: Int, Sendable {
    /// No sync at COMMIT; the log is synced before each checkpoint.
    case normal = 1
    /// The log synced at every COMMIT.
    case full = 2
}
