/// The one error type of the PostgreSQL client: what went wrong, PostgreSQL's SQLSTATE when the
/// server sent one, libpq's message and the statement that failed.
public struct PostgresError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What callers switch on.
    public enum Kind: String, Sendable, Equatable {
        /// The database URL is not a connection string libpq accepts.
        case configuration
        /// No connection: the server is unreachable, refused us, or the link died (a deadline,
        /// keepalives or the TCP user timeout ended it).
        case connection
        /// The server refused a statement (SQLSTATE in `sqlState`).
        case query
    }

    /// What went wrong.
    public var kind: Kind
    /// PostgreSQL's five-character SQLSTATE, when the server sent one (`57014`: canceled by
    /// `statement_timeout`).
    public var sqlState: String?
    /// libpq's or the server's message, on one line.
    public var message: String
    /// The statement that failed, when one did.
    public var sql: String?

    /// An error from its parts.
    public init(kind: Kind, sqlState: String? = nil, message: String, sql: String? = nil) {
        self.kind = kind
        self.sqlState = sqlState
        self.message = message
        self.sql = sql
    }

    /// `kind: message (SQLSTATE x)`.
    public var description: String {
        var text = "\(kind.rawValue): \(message)"
        if let s = sqlState { text += " (SQLSTATE \(s))" }
        return text
    }
}
