#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A node's SQLite order store: its orders, its metadata and (on a master) its journal.
///
/// **One owner, one thread at a time.** An `OrderDatabase` wraps one SQLite connection and its
/// prepared-statement cache. It is not thread-safe by design and has no locks: the node's event
/// loop owns the single read-write instance and is the only writer of the file. Other processes
/// (`ordersync order list` while no daemon runs) use `openReadOnly`, which never writes.
///
/// **Durability.** The read-write connection uses WAL mode with `synchronous=FULL`, so a
/// transaction that `transaction` returned from is on disk. A commit that reported an error
/// may still have reached the disk (an fsync that failed after the write): callers make
/// operations idempotent (operation ids in the journal) instead of assuming it did not.
public final class OrderDatabase {
    /// The busy timeout of every connection.
    public static let busyTimeout: Duration = .seconds(5)

    /// The schema version this build creates and reads.
    public static var schemaVersion: Int64 { Schema.currentVersion }

    let connection: SQLiteConnection
    /// The schema versions `init(path:)` applied to this file (empty when it was current).
    public private(set) var migrationsApplied: [Int64] = []
    /// The copy `init(path:)` made of the file before migrating it (nil when nothing was
    /// migrated): `OrderDatabase.backupBeforeMigration`.
    public private(set) var migrationBackup: MigrationBackup?

    /// Where the connection is in its transactions (`TransactionState`): the one place that
    /// says whether a transaction or a group is open, how deep, or whether a group's COMMIT
    /// runs on another thread.
    var transactionState = TransactionState.none
    /// Statements run just before the open group's COMMIT, on the committing thread (a staged
    /// snapshot's switch, `switchAtGroupCommit()`); taken when the group ends.
    var beforeGroupCommit: [String] = []
    /// Set when a `groupWrite` failed part-way: the group was rolled back then, and its COMMIT
    /// reports this instead of committing (`OrderDatabase+Group.swift`).
    var groupFailure: StoreError?
    /// The log's pages at the last COMMIT, once a `WALCheckpointer` counts them (`sqlite3_wal_hook`).
    let walPageCount = WALPageCount()
    /// The connection's `PRAGMA synchronous` as last read back: FULL but inside a group begun
    /// with another level (`beginGroup(synchronous:)`), which sets FULL again when it ends.
    var synchronous = SynchronousLevel.full

    /// Head office's checkpoint for (store, lineage) as a roll-up on this terminal last wrote it,
    /// asked when a standby bounds its journal (`compactStandbyJournal`) with the copy's
    /// `replica.store` and `replica.epoch`: the entries after it stay. Nil, or an answer of nil:
    /// no roll-up of this copy here.
    public var rollupCheckpoint: ((_ store: String, _ lineage: String) -> Int64?)?

    /// The database file.
    public var path: String { connection.path }

    /// True when opened with `openReadOnly`.
    public var isReadOnly: Bool { connection.isReadOnly }

    /// Opens (or creates) the database at `path` for reading and writing: WAL mode,
    /// `synchronous=FULL`, a busy timeout, and every pending migration applied. A file that
    /// `quick_check` finds damaged is refused (`.damaged`) and left as it is. The file and
    /// its `-wal` and `-shm` companions are mode 0600 whatever the umask (`DatabaseFileMode`).
    public convenience init(path: String) throws {
        try self.init(path: path, now: time(nil))
    }

    /// `init(path:)` with the time a pre-migration copy is named after (tests).
    convenience init(path: String, now: time_t) throws {
        try DatabaseFileMode.restrictToOwner(path)
        try self.init(opening: path, journalMode: "wal", now: now)
    }

    /// A new, empty database in memory (`:memory:`) with the same schema and settings, for tests
    /// and the simulation: SQLite keeps such a database in "memory" journal mode (no WAL, no
    /// file), transactions commit and roll back as on disk, and everything is gone when it is
    /// closed. A node never runs on one.
    public static func inMemory() throws -> OrderDatabase {
        try OrderDatabase(opening: ":memory:", journalMode: "memory")
    }

    /// Opens `path` read-write; `journalMode` is the mode SQLite must report after the WAL
    /// pragma ("wal" for a file, "memory" for `:memory:`).
    private init(opening path: String, journalMode expected: String, now: time_t = time(nil)) throws {
        connection = try SQLiteConnection(path: path, readOnly: false)
        do {
            try connection.setBusyTimeout(OrderDatabase.busyTimeout)
            // "The WAL journaling mode uses a write-ahead log instead of a rollback journal to
            // implement transactions. The WAL journaling mode is persistent; after being set it
            // stays in effect across multiple database connections and after closing and
            // reopening the database." The pragma answers with the mode now in effect.
            let mode = try connection.scalarText("PRAGMA journal_mode = WAL")
            guard mode?.lowercased() == expected else {
                throw StoreError(
                    kind: .sqlite,
                    message: "could not switch to WAL mode (journal_mode is "
                        + "\(mode ?? "unknown"))", sql: "PRAGMA journal_mode = WAL", path: path)
            }
            // "With synchronous=FULL in WAL mode, an additional sync operation of the WAL file
            // happens after each transaction commit. The extra WAL sync following each
            // transaction helps ensure that transactions are durable across a power loss."
            // NORMAL would be faster, but "A transaction committed in WAL mode with
            // synchronous=NORMAL might roll back following a power loss or system crash": an
            // acknowledged order must survive a POS terminal losing power.
            try connection.executeOnce("PRAGMA synchronous = FULL")
            // "Foreign key constraints are disabled by default (for backwards compatibility), so
            // must be enabled separately for each database connection."
            try connection.executeOnce("PRAGMA foreign_keys = ON")
            // Each operation of a group commit is a savepoint, whose undo log is a statement
            // journal: "TEMP_STORE ... When temp_store is MEMORY (2) temporary tables and indices
            // are kept as if they were in pure in-memory databases" (statement journals
            // included), so undoing one operation costs no file writes. What is durable is
            // unchanged: the WAL.
            try connection.executeOnce("PRAGMA temp_store = MEMORY")
            // A group of 2,000 operations dirties more pages than the default 2 MiB cache; a
            // spill would write them to the WAL before the commit (8 MiB, in memory only).
            try connection.executeOnce("PRAGMA cache_size = -8192")
            // A damaged file is refused before anything is written to it (a migration, a row):
            // it stays as it was for whoever recovers it.
            try Self.requireSound(connection)
            migrationBackup = try Self.backupBeforeMigration(connection, now: now)
            migrationsApplied = try Schema.migrate(connection)
            // What a snapshot staged before the store was closed is never resumed (a new link's
            // first part starts anew), and its last parts may be gone after a power cut: they
            // were committed without a sync (`SynchronousLevel`). Dropped unread.
            try connection.executeOnce("DROP TABLE IF EXISTS \(Self.stagingTable)")
            try DatabaseFileMode.restrictCompanions(of: path)
        } catch {
            connection.close()
            throw error
        }
    }

    /// A database on an already open `connection` (read-only, or a backup's copy being made).
    init(connection: SQLiteConnection) {
        self.connection = connection
    }

    /// Opens an existing database read-only (SQLITE_OPEN_READONLY): no migrations, no writes.
    ///
    /// Throws `.missingDatabase` when the file does not exist, `.schemaTooNew` when a newer
    /// build wrote it, `.schemaMismatch` when it is not an OrderSync database of this build's
    /// schema, and `.damaged` when `quick_check` finds problems. Every write method throws
    /// `.readOnly`.
    public static func openReadOnly(path: String) throws -> OrderDatabase {
        guard access(path, F_OK) == 0 else {
            throw StoreError(
                kind: .missingDatabase,
                message: "no database at \(path); start the node for this data dir first",
                path: path)
        }
        let connection = try SQLiteConnection(path: path, readOnly: true)
        do {
            try connection.setBusyTimeout(busyTimeout)
            try Schema.checkReadable(connection)
            try requireSound(connection)
        } catch {
            connection.close()
            throw error
        }
        return OrderDatabase(connection: connection)
    }

    deinit { close() }

    /// Closes the connection. Safe to call more than once; later calls on this object throw
    /// `.closed`.
    public func close() {
        connection.close()
    }

    /// The `PRAGMA user_version` of the file.
    public func schemaVersionOnDisk() throws -> Int64 {
        try Schema.version(of: connection)
    }

    /// The database epoch: a UUID made once together with the database.
    public func databaseEpoch() throws -> String {
        guard let epoch = try metadata("database.epoch") else {
            throw StoreError(kind: .corruptRow, message: "the database has no epoch in its metadata", path: path)
        }
        return epoch
    }

    // MARK: - Metadata

    /// The metadata value for `key`, or nil.
    public func metadata(_ key: String) throws -> String? {
        try connection.scalarText("SELECT value FROM metadata WHERE key = ?", [.text(key)])
    }

    /// Sets the metadata value for `key`, replacing any earlier one.
    public func setMetadata(_ key: String, _ value: String) throws {
        try requireWritable()
        try connection.execute(
            "INSERT INTO metadata (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [.text(key), .text(value)])
    }

    /// Removes the metadata value for `key`; no error when it is absent.
    public func removeMetadata(_ key: String) throws {
        try requireWritable()
        try connection.execute("DELETE FROM metadata WHERE key = ?", [.text(key)])
    }

    // MARK: - Transactions

    /// True while a `transaction` body runs.
    public var isInTransaction: Bool { transactionState.depth > 0 }

    /// Runs `body` in one write transaction: `BEGIN IMMEDIATE` ... `COMMIT`, or `ROLLBACK` when
    /// `body` (or the commit) throws. A nested call runs as a savepoint inside the outer
    /// transaction: if it throws, only its own changes are undone; nothing is on disk until the
    /// outermost call commits.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try requireWritable()
        if transactionState.depth > 0 {
            return try savepoint(body)
        }
        // "IMMEDIATE cause the database connection to start a new write immediately, without
        // waiting for a write statement": a busy database fails here, before any work is done.
        try connection.execute("BEGIN IMMEDIATE")
        transactionState.began()
        defer { transactionState.ended() }
        let result: T
        do {
            result = try body()
            try connection.execute("COMMIT")
        } catch {
            rollbackIfOpen()
            throw error
        }
        return result
    }

    private func savepoint<T>(_ body: () throws -> T) throws -> T {
        // An error such as SQLITE_FULL may have rolled back the whole transaction already; a
        // SAVEPOINT now would silently start a new one outside the caller's.
        guard !connection.isAutocommit else {
            throw StoreError(
                kind: .sqlite, message: "the enclosing transaction was already rolled back by SQLite",
                path: path)
        }
        // "The RELEASE command starts with the most recent addition to the transaction stack
        // and releases savepoints backwards in time until it releases a savepoint with a matching
        // savepoint-name": one fixed name serves every nesting level.
        try connection.execute("SAVEPOINT nested")
        transactionState.nested()
        defer { transactionState.released() }
        let result: T
        do {
            result = try body()
        } catch {
            if !connection.isAutocommit {
                // "unlike that plain ROLLBACK command (without the TO keyword) the ROLLBACK TO
                // command does not cancel the transaction": the savepoint stays on the stack,
                // so it is released after its changes are rolled back.
                _ = try? connection.execute("ROLLBACK TO nested")
                _ = try? connection.execute("RELEASE nested")
            }
            throw error
        }
        try connection.execute("RELEASE nested")
        return result
    }

    /// Rolls back the open transaction, if SQLite has not already done so.
    private func rollbackIfOpen() {
        // "If certain kinds of errors occur on a statement within a multi-statement transaction
        // (errors including SQLITE_FULL, SQLITE_IOERR, SQLITE_NOMEM, SQLITE_BUSY, and
        // SQLITE_INTERRUPT) then the transaction might be rolled back automatically."
        if !connection.isAutocommit {
            _ = try? connection.execute("ROLLBACK")
        }
    }

    /// Runs `body` inside a read transaction unless a transaction is already open, so several
    /// queries (a count and a page) see one snapshot even while another process writes.
    func reading<T>(_ body: () throws -> T) throws -> T {
        guard connection.isAutocommit else { return try body() }
        // "When a read operation begins on a WAL-mode database, it first remembers the location
        // of the last valid commit record in the WAL" (sqlite.org/wal.html): every query of the
        // read transaction sees the database as of that commit.
        try connection.execute("BEGIN DEFERRED")
        do {
            let result = try body()
            try connection.execute("COMMIT")
            return result
        } catch {
            if !connection.isAutocommit { _ = try? connection.execute("ROLLBACK") }
            throw error
        }
    }

    /// Throws `.readOnly` on a read-only connection and `.closed` after `close()`.
    func requireWritable() throws {
        _ = try connection.openHandle()
        if connection.isReadOnly { throw StoreError.readOnlyConnection(path: path) }
    }
}
