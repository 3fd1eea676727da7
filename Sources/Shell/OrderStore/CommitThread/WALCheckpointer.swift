internal import CSQLite3
import Glibc

/// Checkpoints of the write-ahead log, kept off the groups' COMMITs.
///
/// SQLite checkpoints on its own: "Every new database connection defaults to having the
/// auto-checkpoint enabled with a threshold of 1000 [...] pages", run "after committing a
/// transaction" inside the COMMIT that crossed it (sqlite3.h, `sqlite3_wal_autocheckpoint`).
/// With `synchronous=FULL` that checkpoint syncs the log, copies its pages into the database
/// file and syncs that too, so about one group in a hundred waited for two more syncs and the
/// copy before its answers could leave: the tail of the master's latency at quiet hours
/// (Docs/PERFORMANCE.md, "Quiet-hour latency").
///
/// `init?(deferringFor:)` turns that off for the writer's connection and counts instead the
/// log's pages at each COMMIT (`sqlite3_wal_hook`: "the number of pages currently in the
/// write-ahead log file"; `DetachedCommit.walPages`); the owner runs `run()` once the group's
/// answers have left, on the thread its COMMITs run on, so a checkpoint never shares the disk
/// with a COMMIT's sync. `run()` is a PASSIVE checkpoint ("Checkpoint as many frames as
/// possible without waiting for any database readers or writers to finish") on a connection
/// of its own with `synchronous=FULL`, so the database file is synced before the log may be
/// written over: what was acknowledged stays on disk throughout, in the log or in the file.
//
// **The log's size.** SQLite never shrinks the log after a checkpoint: "the write-ahead log file
// is not truncated following a checkpoint. Instead, SQLite reuses the existing file" (pragma
// `journal_size_limit`). It starts over from its beginning only when the first write after a
// complete checkpoint began its transaction with nothing left in the log; a group opened while
// the checkpoint ran appends instead, so the owner's next group waits for the checkpoint
// (`StoreWriter.holdsGroupsForCheckpoint`). The log still grows while a reader keeps an older
// view, and stays that large. So the writer's connection gets a `journal_size_limit`
// (`logSizeLimit`: the first COMMIT after the log starts over cuts the file back to it), and
// `truncateLog()`, run by the owner once the store has been a second without a commit, empties a
// file grown past it (a TRUNCATE checkpoint that never waits). A till's disk then holds what it
// keeps plus one log of `logSizeLimit`, not the high-water mark of its busiest minute
// (Docs/OPERATIONS.md, "A node's disk use").
// @unchecked Sendable: made on the owner's thread, then used by `run()`, `truncateLog()` and
// `close()` only on the one thread the owner's COMMITs run on, one call at a time.
public final class WALCheckpointer: @unchecked Sendable {
    /// The log's size, in pages, from which a checkpoint is due: SQLite's own default.
    public static let thresholdPages = 1000
    /// The log's size, in bytes, a complete checkpoint leaves at most: a little more than the
    /// threshold's pages with their frame headers (1,000 x (4,096 + 24) B), so that a log that
    /// starts over at quiet hours is written over rather than grown again.
    public static let logSizeLimit = 4 * 1024 * 1024 + 64 * 1024

    private let connection: SQLiteConnection
    /// Where the writer's connection notes the log's pages at each COMMIT; kept alive by it.
    private let pages: WALPageCount

    /// How a checkpoint went: the log's pages and how many of them are now in the database file.
    public struct Outcome: Sendable, Equatable {
        public let logPages: Int
        public let checkpointedPages: Int
    }

    /// Takes the checkpoints of `database` (the node's read-write connection, idle, a file in
    /// WAL mode) away from its COMMITs, onto a connection of its own. Nil for a database in
    /// memory (no log) or when the second connection cannot be opened: SQLite then keeps
    /// checkpointing in the COMMITs, as before.
    public init?(deferringFor database: OrderDatabase) {
        guard !database.isReadOnly, (try? database.connection.scalarText("PRAGMA journal_mode"))?.lowercased() == "wal",
            let writer = database.connection.handle
        else { return nil }
        do {
            let connection = try SQLiteConnection(path: database.path, readOnly: false)
            do {
                // The checkpoint syncs the database file before the log may be reset ("FULL (2)
                // ... ensure that all content is safely written to the disk surface prior to
                // continuing") only when its connection syncs at all.
                try connection.executeOnce("PRAGMA synchronous = FULL")
                // This connection never commits; no checkpoint of its own either.
                sqlite3_wal_autocheckpoint(connection.handle, 0)
                // Opens the log for this connection (a checkpoint on a connection that has not
                // read the database yet does nothing).
                _ = try connection.scalarInt("SELECT count(*) FROM sqlite_schema")
            } catch {
                connection.close()
                throw error
            }
            self.connection = connection
        } catch {
            return nil
        }
        pages = database.walPageCount
        // journal_size_limit "may be used to limit the size of rollback-journal and WAL files left
        // in the file-system after transactions or checkpoints": SQLite applies it at the first
        // COMMIT after the log starts over, on the connection committing, the writer's.
        try? database.connection.executeOnce("PRAGMA journal_size_limit = \(Self.logSizeLimit)")
        // "registering a callback using sqlite3_wal_hook() disables the automatic checkpoint
        // mechanism"; the hook runs in the COMMIT, on the committing thread.
        sqlite3_wal_hook(
            writer,
            { context, _, _, pages in
                if let context { Unmanaged<WALPageCount>.fromOpaque(context).takeUnretainedValue().pages = Int(pages) }
                return SQLITE_OK
            }, Unmanaged.passUnretained(pages).toOpaque())
    }

    /// Runs a PASSIVE checkpoint: copies what it can of the log into the database file and
    /// syncs it. Never waits for a lock (a reader keeping an older view only leaves more for the
    /// next one). On the owner's committing thread, between COMMITs.
    public func run() -> Result<Outcome, StoreError> {
        guard let db = connection.handle else { return .failure(StoreError.closed(path: connection.path)) }
        var log: Int32 = -1
        var done: Int32 = -1
        let rc = sqlite3_wal_checkpoint_v2(db, nil, SQLITE_CHECKPOINT_PASSIVE, &log, &done)
        guard rc == SQLITE_OK else {
            return .failure(SQLiteConnection.error(rc: rc, db: db, sql: "checkpoint(PASSIVE)", path: connection.path))
        }
        return .success(Outcome(logPages: Int(log), checkpointedPages: Int(done)))
    }

    /// Empties the log when its file is larger than `limit` and every page of it is in
    /// the database file already: a TRUNCATE checkpoint ("This mode works the same way as
    /// RESTART with the addition that it also truncates the log file to zero bytes just prior to
    /// a successful return"). This connection has no busy handler, so it never waits: a group
    /// holding the write lock, or a reader still using the log, makes it return SQLITE_BUSY and
    /// the log stays as it was (`.busy`: the owner tries again later). Its pages are in the synced
    /// database file before it is emptied: SQLite syncs the database file (`synchronous=FULL`)
    /// at every checkpoint that copies the log to its end, not at one stopped short by a reader
    /// (wal.c `walCheckpoint`), and this one copies what is left, then syncs, before it may
    /// truncate. On the owner's committing thread, between COMMITs, while the owner has no group
    /// open.
    public func truncateLog(over limit: Int = logSizeLimit) -> Result<Truncation, StoreError> {
        guard let db = connection.handle else { return .failure(StoreError.closed(path: connection.path)) }
        var info = stat()
        guard stat(connection.path + "-wal", &info) == 0, Int(info.st_size) > limit else {
            return .success(.withinLimit)
        }
        let rc = sqlite3_wal_checkpoint_v2(db, nil, SQLITE_CHECKPOINT_TRUNCATE, nil, nil)
        if rc == SQLITE_BUSY { return .success(.busy) }
        guard rc == SQLITE_OK else {
            return .failure(SQLiteConnection.error(rc: rc, db: db, sql: "checkpoint(TRUNCATE)", path: connection.path))
        }
        return .success(.truncated)
    }

    /// What `truncateLog()` did.
    public enum Truncation: Sendable, Equatable {
        /// The log's file is empty now.
        case truncated
        /// The file was no larger than `logSizeLimit` (or absent): nothing to do.
        case withinLimit
        /// A group held the write lock or a reader used the log: the file stays as it was.
        case busy
    }

    /// Closes the connection (on the committing thread, no checkpoint running).
    public func close() {
        connection.close()
    }
}

/// The log's pages as the writer's connection last committed them (`sqlite3_wal_hook`): set
/// and read on the thread running the connection's COMMIT (the connection is lent to one
/// thread at a time).
final class WALPageCount {
    /// Nil before a COMMIT that wrote to the log.
    var pages: Int?
}
