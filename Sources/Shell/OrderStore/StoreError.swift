internal import CSQLite3

/// The one error type of the order store.
///
/// Errors that come from SQLite keep its extended result code and the SQL that failed (like
/// GRDB's `DatabaseError`); errors the store raises itself (an order that does not exist, a
/// file that is missing) have no code. `kind` is what callers switch on.
public struct StoreError: Error, CustomStringConvertible, Equatable {
    /// What went wrong, in a form callers can act on.
    public enum Kind: String, Sendable, Equatable {
        /// The order (or other row) named by the caller does not exist.
        case notFound
        /// A row with the same key (order uuid, journal seq or operation id) already exists.
        case duplicate
        /// Another constraint (NOT NULL, CHECK, foreign key) refused the change.
        case constraint
        /// A write on a database opened read-only, or on a file SQLite cannot write.
        case readOnly
        /// The database file does not exist (read-only open never creates one).
        case missingDatabase
        /// The file's schema was written by a newer build of OrderSync.
        case schemaTooNew
        /// The file is not an OrderSync database, or its schema is older than this build and the
        /// connection may not migrate it (read-only open).
        case schemaMismatch
        /// Another connection held a lock for longer than the busy timeout.
        case busy
        /// The disk (or the file system holding the database) is full.
        case full
        /// A stored row could not be decoded (hand-edited or damaged file).
        case corruptRow
        /// The file is damaged: SQLite's `quick_check` found problems, or SQLite reported the file
        /// corrupt or not a database (SQLITE_CORRUPT, SQLITE_NOTADB). `problems` has its lines.
        case damaged
        /// A caller passed a value the store cannot use (a page below 1, ...).
        case invalidArgument
        /// The database was used after `close()`.
        case closed
        /// Any other SQLite failure; see `code` and `message`.
        case sqlite
    }

    /// What went wrong.
    public var kind: Kind
    /// SQLite extended result code (for example 2067, SQLITE_CONSTRAINT_UNIQUE), or nil when the
    /// store raised the error itself.
    public var code: Int32?
    /// Human-readable explanation (SQLite's own message when it comes from SQLite).
    public var message: String
    /// The SQL statement that failed, if any. Never contains values: they are bound parameters.
    public var sql: String?
    /// The database file the error is about.
    public var path: String?
    /// `.damaged` from `quick_check`: its first lines, as SQLite wrote them.
    public var problems: [String] = []

    /// An error from its parts.
    public init(
        kind: Kind, code: Int32? = nil, message: String, sql: String? = nil, path: String? = nil, problems: [String] = []
    ) {
        self.kind = kind
        self.problems = problems
        self.code = code
        self.message = message
        self.sql = sql
        self.path = path
    }

    /// The primary result code (the low 8 bits of `code`), e.g. 19 for any SQLITE_CONSTRAINT_*.
    public var primaryCode: Int32? { code.map { $0 & 0xFF } }

    /// One line for logs: kind, message, code, file and SQL.
    public var description: String {
        var text = "store error (\(kind.rawValue)): \(message)"
        if let code { text += " [SQLite code \(code)]" }
        if let path { text += " [file \(path)]" }
        if let sql { text += " [sql: \(sql)]" }
        if kind == .damaged { text += "; see \"A damaged store\" in Docs/OPERATIONS.md" }
        return text
    }

    /// An order that does not exist.
    static func notFound(uuid: String, path: String?) -> StoreError {
        StoreError(kind: .notFound, message: "no order with uuid \(uuid)", path: path)
    }

    /// A use after `close()`.
    static func closed(path: String) -> StoreError {
        StoreError(kind: .closed, message: "the database was closed", path: path)
    }

    /// A write attempted on a connection opened with `openReadOnly`.
    static func readOnlyConnection(path: String) -> StoreError {
        StoreError(
            kind: .readOnly, message: "the database is open read-only; writes go through the daemon",
            path: path)
    }

    // The extended codes are macros Swift cannot import ("(SQLITE_CONSTRAINT | (6<<8))").
    static let constraintPrimaryKey: Int32 = SQLITE_CONSTRAINT | (6 << 8)
    static let constraintUnique: Int32 = SQLITE_CONSTRAINT | (8 << 8)
    static let constraintRowID: Int32 = SQLITE_CONSTRAINT | (10 << 8)

    /// Maps a SQLite result code to a kind. Extended codes are kept in the error itself.
    static func kind(forSQLiteCode code: Int32) -> Kind {
        switch code {
        // "SQLITE_CONSTRAINT_PRIMARYKEY ... a PRIMARY KEY constraint failed" and
        // "SQLITE_CONSTRAINT_UNIQUE ... a UNIQUE constraint failed" (sqlite.org/rescode.html).
        case constraintPrimaryKey, constraintUnique, constraintRowID:
            return .duplicate
        default:
            break
        }
        switch code & 0xFF {
        case SQLITE_CONSTRAINT: return .constraint
        case SQLITE_READONLY: return .readOnly
        case SQLITE_BUSY, SQLITE_LOCKED: return .busy
        case SQLITE_FULL: return .full
        case SQLITE_CORRUPT, SQLITE_NOTADB: return .damaged
        default: return .sqlite
        }
    }
}
