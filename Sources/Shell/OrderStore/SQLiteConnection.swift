internal import CSQLite3

/// One SQLite connection and its cache of prepared statements.
///
/// Not thread-safe by design: it is opened with SQLITE_OPEN_NOMUTEX and must be used by one
/// owner at a time (see `OrderDatabase`). "The new database connection will use the
/// 'multi-thread' threading mode. This means that separate threads are allowed to use SQLite at
/// the same time, as long as each thread is using a different database connection."
final class SQLiteConnection {
    /// The connection handle; nil once closed.
    private(set) var handle: OpaquePointer?
    /// The database file.
    let path: String
    /// True when opened with SQLITE_OPEN_READONLY.
    let isReadOnly: Bool
    /// Prepared statements by SQL text, reused across calls.
    private var cache: [String: SQLiteStatement] = [:]

    /// The process-wide settings, made once before the first connection opens (SQLite takes
    /// them only before it initializes): no memory statistics, so that no allocation of
    /// SQLite's takes a global mutex (`ordersync_sqlite_configure`, Docs/PERFORMANCE.md "Where
    /// an operation's instructions go"). SQLITE_MISUSE when something in the process
    /// initialized SQLite first (a test's VFS): then the statistics stay on, which is slower
    /// only.
    static let configured: Int32 = ordersync_sqlite_configure()

    /// The bytes SQLite counts as in use (`sqlite3_memory_used()`): 0 while it keeps no memory
    /// statistics.
    static var memoryUsed: Int64 { sqlite3_memory_used() }

    /// Opens `path`. Read-write opens create the file; read-only opens never do.
    init(path: String, readOnly: Bool) throws {
        _ = SQLiteConnection.configured
        self.path = path
        self.isReadOnly = readOnly
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        flags |= readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        var db: OpaquePointer?
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            // "Whether or not an error occurs when it is opened, resources associated with the
            // database connection handle should be released by passing it to sqlite3_close()".
            let error: StoreError
            if let db {
                error = SQLiteConnection.error(rc: rc, db: db, sql: nil, path: path)
            } else {
                error = StoreError(kind: .sqlite, code: rc, message: String(cString: sqlite3_errstr(rc)), path: path)
            }
            sqlite3_close_v2(db)
            throw error
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
    }

    deinit { close() }

    /// Finalizes every cached statement and closes the connection. Safe to call twice.
    func close() {
        precondition(!isLent, "the connection was closed while a COMMIT ran on another thread")
        for statement in cache.values { statement.finalize() }
        cache.removeAll()
        guard let db = handle else { return }
        handle = nil
        // "If sqlite3_close_v2() is called with unfinalized prepared statements ... it marks the
        // database connection as an unusable 'zombie' and makes arrangements to automatically
        // deallocate the database connection after all prepared statements are finalized": the
        // handle is released in every case.
        sqlite3_close_v2(db)
    }

    /// True while the handle is lent to a COMMIT running on another thread
    /// (`OrderDatabase.detachGroupCommit()` until `finishGroupCommit(_:)`). Nothing waits for
    /// it: using the connection meanwhile is the owner's bug. A debug build traps on it (the
    /// tests find such a path); a release build refuses the use with a `.busy` error, so SQLite
    /// is never called on two threads at once and a shop's master answers that one request
    /// with an error instead of going down.
    var isLent = false

    /// The open handle, or a `.closed` error (or `.busy` while the handle is lent).
    func openHandle() throws -> OpaquePointer {
        if isLent {
            assertionFailure("the connection was used while its COMMIT ran on another thread")
            throw StoreError(
                kind: .busy, message: "the store is committing a group on another thread", path: path)
        }
        guard let handle else { throw StoreError.closed(path: path) }
        return handle
    }

    /// Sets the busy timeout (SQLite counts it in whole milliseconds; rounded down).
    func setBusyTimeout(_ timeout: Duration) throws {
        let db = try openHandle()
        let (seconds, attoseconds) = timeout.components
        let milliseconds = Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000)
        // "This routine sets a busy handler that sleeps for a specified amount of time when a
        // table is locked. The handler will sleep multiple times until at least "ms"
        // milliseconds of sleeping have accumulated."
        let rc = sqlite3_busy_timeout(db, milliseconds)
        guard rc == SQLITE_OK else { throw SQLiteConnection.error(rc: rc, db: db, sql: nil, path: path) }
    }

    /// Runs `body` with the cached statement for `sql`, bound to `values`, and resets it after.
    ///
    /// If the cached statement is already in use (a caller nested a query inside another one),
    /// a one-off statement is prepared instead so the outer one is not disturbed.
    func withStatement<T>(
        _ sql: String, _ values: [SQLiteValue] = [],
        _ body: (SQLiteStatement) throws -> T
    ) throws -> T {
        let db = try openHandle()
        let statement: SQLiteStatement
        if let cached = cache[sql], !cached.inUse {
            statement = cached
        } else if cache[sql] == nil {
            statement = try SQLiteStatement(db: db, sql: sql, path: path, persistent: true)
            cache[sql] = statement
        } else {
            statement = try SQLiteStatement(db: db, sql: sql, path: path, persistent: false)
        }
        statement.inUse = true
        defer {
            statement.reset()
            statement.inUse = false
        }
        try statement.bind(values)
        return try body(statement)
    }

    /// Runs a statement that returns no rows; returns the number of rows it changed.
    @discardableResult
    func execute(_ sql: String, _ values: [SQLiteValue] = []) throws -> Int {
        let db = try openHandle()
        return try withStatement(sql, values) { statement in
            while try statement.step() {}
            // "These functions return the number of rows modified, inserted or deleted by the
            // most recently completed INSERT, UPDATE or DELETE statement".
            return Int(sqlite3_changes64(db))
        }
    }

    /// Runs a statement once without caching it (schema changes, PRAGMAs run once).
    func executeOnce(_ sql: String) throws {
        let db = try openHandle()
        let statement = try SQLiteStatement(db: db, sql: sql, path: path, persistent: false)
        defer { statement.finalize() }
        while try statement.step() {}
    }

    /// The first column of the first row of `sql`, as an integer (nil when there is no row or it
    /// is NULL).
    func scalarInt(_ sql: String, _ values: [SQLiteValue] = []) throws -> Int64? {
        try withStatement(sql, values) { statement in
            try statement.step() ? statement.optionalInt64(0) : nil
        }
    }

    /// The first column of the first row of `sql`, as text (nil when there is no row or it is
    /// NULL).
    func scalarText(_ sql: String, _ values: [SQLiteValue] = []) throws -> String? {
        try withStatement(sql, values) { statement in
            try statement.step() ? statement.optionalText(0) : nil
        }
    }

    /// True when no transaction is open ("The sqlite3_get_autocommit() interface returns non-zero
    /// or zero if the given database connection is or is not in autocommit mode").
    var isAutocommit: Bool {
        if isLent {
            // A transaction is open (its COMMIT runs elsewhere); the statement that follows is
            // refused by `openHandle()`.
            assertionFailure("the connection was used while its COMMIT ran on another thread")
            return false
        }
        guard let handle else { return true }
        return sqlite3_get_autocommit(handle) != 0
    }

    /// A `StoreError` for result code `rc` on `db`, with SQLite's message.
    static func error(rc: Int32, db: OpaquePointer?, sql: String?, path: String) -> StoreError {
        var code = rc
        var message = String(cString: sqlite3_errstr(rc))
        if let db {
            let extended = sqlite3_extended_errcode(db)
            // The connection's last error is only about this call when its primary code matches.
            if extended & 0xFF == rc & 0xFF { code = extended }
            if let text = sqlite3_errmsg(db) { message = String(cString: text) }
        }
        return StoreError(
            kind: StoreError.kind(forSQLiteCode: code), code: code, message: message, sql: sql,
            path: path)
    }
}
