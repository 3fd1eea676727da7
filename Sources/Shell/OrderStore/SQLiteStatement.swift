internal import CSQLite3

/// A value bound to a `?` parameter or read from a column.
enum SQLiteValue: Equatable {
    case null
    case integer(Int64)
    case text(String)
    /// UTF-8 text already held as bytes (a wire message): bound as TEXT, with no `String` made.
    case utf8([UInt8])

    /// `.text(s)`, or `.null` when `s` is nil.
    static func text(_ s: String?) -> SQLiteValue { s.map(SQLiteValue.text) ?? .null }
    /// `.integer(v)`, or `.null` when `v` is nil.
    static func integer(_ v: Int64?) -> SQLiteValue { v.map(SQLiteValue.integer) ?? .null }
}

/// One prepared statement, owned by the `SQLiteConnection` that prepared it.
///
/// Values only ever reach SQLite through `bind`, never through the SQL text. A statement is
/// reset and its bindings cleared after every use, so a cached statement can be used again.
final class SQLiteStatement {
    /// The statement handle; nil once finalized.
    private(set) var handle: OpaquePointer?
    /// The SQL it was prepared from, for errors.
    let sql: String
    /// The connection handle, for error messages.
    private let db: OpaquePointer
    /// The database file, for errors.
    private let path: String
    /// True while a caller is stepping through it; a second concurrent use gets a fresh statement.
    var inUse = false

    init(db: OpaquePointer, sql: String, path: String, persistent: Bool) throws {
        self.db = db
        self.sql = sql
        self.path = path
        var stmt: OpaquePointer?
        // "The SQLITE_PREPARE_PERSISTENT flag is a hint to the query planner that the prepared
        // statement will be retained for a long time and probably reused many times."
        let flags: UInt32 = persistent ? UInt32(SQLITE_PREPARE_PERSISTENT) : 0
        let rc = sqlite3_prepare_v3(db, sql, -1, flags, &stmt, nil)
        guard rc == SQLITE_OK, let stmt else {
            sqlite3_finalize(stmt)
            throw SQLiteConnection.error(rc: rc, db: db, sql: sql, path: path)
        }
        handle = stmt
    }

    deinit { finalize() }

    /// Releases the handle; later use is a programming error.
    func finalize() {
        if let handle { sqlite3_finalize(handle) }
        handle = nil
    }

    /// Binds `values` to parameters 1, 2, ... in order.
    func bind(_ values: [SQLiteValue]) throws {
        guard let handle else { preconditionFailure("statement used after finalize: \(sql)") }
        precondition(
            Int32(values.count) == sqlite3_bind_parameter_count(handle),
            "wrong number of parameters for \(sql)")
        for (i, value) in values.enumerated() {
            let index = Int32(i + 1)
            let rc: Int32
            switch value {
            case .null:
                rc = sqlite3_bind_null(handle, index)
            case .integer(let v):
                rc = sqlite3_bind_int64(handle, index, v)
            case .text(let s):
                rc = SQLiteStatement.bindText(s, to: handle, at: index)
            case .utf8(let bytes):
                rc = bytes.withUnsafeBufferPointer { SQLiteStatement.bindText($0, to: handle, at: index) }
            }
            guard rc == SQLITE_OK else { throw SQLiteConnection.error(rc: rc, db: db, sql: sql, path: path) }
        }
    }

    /// Binds UTF-8 text with its exact length, so text containing NUL bytes is kept whole.
    private static func bindText(_ s: String, to handle: OpaquePointer, at index: Int32) -> Int32 {
        var copy = s
        return copy.withUTF8 { bindText($0, to: handle, at: index) }
    }

    /// Binds UTF-8 bytes as text with their exact length.
    private static func bindText(_ buffer: UnsafeBufferPointer<UInt8>, to handle: OpaquePointer, at index: Int32) -> Int32 {
        // "If the third parameter to sqlite3_bind_text() ... is a NULL pointer then the fourth
        // parameter is ignored and the end result is the same as sqlite3_bind_null()": an
        // empty string must therefore still pass a real pointer.
        guard let base = buffer.baseAddress, buffer.count > 0 else {
            return "".withCString { sqlite3_bind_text(handle, index, $0, 0, ordersync_sqlite_transient()) }
        }
        return base.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
            sqlite3_bind_text64(
                handle, index, $0, UInt64(buffer.count), ordersync_sqlite_transient(),
                UInt8(SQLITE_UTF8))
        }
    }

    /// Advances to the next row: true when a row is available, false when done.
    func step() throws -> Bool {
        guard let handle else { preconditionFailure("statement used after finalize: \(sql)") }
        let rc = sqlite3_step(handle)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw SQLiteConnection.error(rc: rc, db: db, sql: sql, path: path)
        }
    }

    /// Resets the statement and clears its bindings so it can be used again.
    func reset() {
        guard let handle else { return }
        // "If the most recent call to sqlite3_step(S) ... indicated an error, then
        // sqlite3_reset(S) returns an appropriate error code": that error was already thrown
        // by `step`, so the code is ignored here.
        _ = sqlite3_reset(handle)
        _ = sqlite3_clear_bindings(handle)
    }

    /// True when column `index` of the current row is NULL.
    func isNull(_ index: Int32) -> Bool {
        sqlite3_column_type(handle, index) == SQLITE_NULL
    }

    /// Column `index` of the current row as an integer (0 for NULL).
    func int64(_ index: Int32) -> Int64 {
        sqlite3_column_int64(handle, index)
    }

    /// Column `index` of the current row as an integer, or nil for NULL.
    func optionalInt64(_ index: Int32) -> Int64? {
        isNull(index) ? nil : int64(index)
    }

    /// Column `index` of the current row as text, or nil for NULL.
    func optionalText(_ index: Int32) -> String? {
        guard !isNull(index), let bytes = sqlite3_column_text(handle, index) else { return nil }
        // "call ... sqlite3_column_text() ... first to force the result into the desired format,
        // then invoke sqlite3_column_bytes() ... to find the size of the result."
        let count = Int(sqlite3_column_bytes(handle, index))
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    /// Column `index` of the current row as its UTF-8 bytes (empty for NULL), with no `String`
    /// made: for stored wire messages, which are sent as they are.
    func utf8(_ index: Int32) -> [UInt8] {
        guard !isNull(index), let bytes = sqlite3_column_text(handle, index) else { return [] }
        let count = Int(sqlite3_column_bytes(handle, index))
        return Array(UnsafeBufferPointer(start: bytes, count: count))
    }

    /// Column `index` of the current row as text ("" for NULL).
    func text(_ index: Int32) -> String {
        optionalText(index) ?? ""
    }
}
