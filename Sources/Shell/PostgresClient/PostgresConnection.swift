internal import CLibPQ

#if canImport(Glibc)
    import Glibc
#endif

/// One connection to a PostgreSQL server through libpq: the only owner of its `PGconn`, used
/// from one thread, closed deliberately (`close()`) or when dropped.
///
/// A dead link must fail in seconds, not after the kernel's 15 minutes of retransmissions: the
/// connection asks for a connect deadline, TCP keepalives and a TCP user timeout, and sets a
/// `statement_timeout` for its session, unless the URL sets them itself. TLS is whatever the
/// URL asks for (`sslmode`, `sslrootcert`): libpq checks the server's certificate against the
/// root certificate and its name against the host for `sslmode=verify-full`.
public final class PostgresConnection {
    /// The deadlines asked for when the URL does not set them.
    public struct Deadlines: Sendable, Equatable {
        /// `connect_timeout`, seconds.
        public var connectSeconds: Int = 10
        /// `keepalives_idle`, `keepalives_interval` (seconds) and `keepalives_count`.
        public var keepaliveIdleSeconds: Int = 10
        public var keepaliveIntervalSeconds: Int = 5
        public var keepaliveCount: Int = 3
        /// `tcp_user_timeout`, milliseconds: unacknowledged data this long closes the link.
        public var tcpUserTimeoutMillis: Int = 20_000
        /// The session's `statement_timeout`, milliseconds, unless the URL's `options` set one.
        public var statementTimeoutMillis: Int = 60_000

        /// The defaults: 10 s to connect, a dead link noticed in about 20 s.
        public init() {}
    }

    private(set) var handle: OpaquePointer?
    private let interrupt: PostgresInterrupt?

    /// Checks that `url` is a connection string libpq accepts (a `postgresql://` URI or
    /// `key=value` pairs) without connecting; throws `.configuration` with libpq's reason.
    public static func validate(url: String) throws(PostgresError) {
        var message: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(url, &message) else {
            let reason = message.map { String(cString: $0) } ?? "not a connection string"
            if let message { PQfreemem(message) }
            throw PostgresError(kind: .configuration, message: "bad database URL: " + oneLine(reason))
        }
        PQconninfoFree(options)
    }

    /// Connects to `url` with `deadlines` for what the URL leaves unset; throws `.configuration`
    /// for a URL libpq does not accept and `.connection` when no session could be opened.
    /// `interrupt`, when given, can break any call of this connection from another thread.
    public init(
        url: String, applicationName: String, deadlines: Deadlines = Deadlines(), interrupt: PostgresInterrupt? = nil
    ) throws(PostgresError) {
        self.interrupt = interrupt
        try Self.validate(url: url)
        // "When key words are repeated, the last processed value is retained": our defaults come
        // first and `dbname` (expanded from the URL, expand_dbname = 1) last, so the URL wins.
        let pairs: [(String, String)] = [
            ("connect_timeout", "\(deadlines.connectSeconds)"), ("keepalives", "1"),
            ("keepalives_idle", "\(deadlines.keepaliveIdleSeconds)"),
            ("keepalives_interval", "\(deadlines.keepaliveIntervalSeconds)"),
            ("keepalives_count", "\(deadlines.keepaliveCount)"),
            ("tcp_user_timeout", "\(deadlines.tcpUserTimeoutMillis)"), ("application_name", applicationName),
            ("dbname", url),
        ]
        let keys = pairs.map { strdup($0.0) }
        let values = pairs.map { strdup($0.1) }
        defer {
            keys.forEach { free($0) }
            values.forEach { free($0) }
        }
        let keyPointers: [UnsafePointer<CChar>?] = keys.map { UnsafePointer($0) } + [nil]
        let valuePointers: [UnsafePointer<CChar>?] = values.map { UnsafePointer($0) } + [nil]
        handle = PQconnectdbParams(keyPointers, valuePointers, 1)
        guard let handle, PQstatus(handle) == CONNECTION_OK else {
            let reason = handle.map { Self.oneLine(String(cString: PQerrorMessage($0))) } ?? "out of memory"
            close()
            if Self.isCertificateRefusal(reason) {
                throw PostgresError(kind: .configuration, message: "TLS check of the server failed: " + reason)
            }
            throw PostgresError(kind: .connection, message: reason)
        }
        interrupt?.attach(socket: PQsocket(handle))
        let current = try execute("SHOW statement_timeout")
        if current.text(0, 0) == "0" {
            _ = try execute(
                "SELECT set_config('statement_timeout', $1, false)", [.text("\(deadlines.statementTimeoutMillis)")])
        }
    }

    deinit { close() }

    /// Closes the connection; safe to call more than once.
    public func close() {
        interrupt?.detach()
        if let handle { PQfinish(handle) }
        handle = nil
    }

    /// True while the session is open and libpq has not seen it fail.
    public var isConnected: Bool {
        guard let handle else { return false }
        return PQstatus(handle) == CONNECTION_OK
    }

    /// Runs `sql` with `parameters` ($1, $2, … in order) and returns its rows in text format.
    /// A failure is `.connection` when the link is gone (the caller reconnects), else `.query`.
    @discardableResult
    public func execute(_ sql: String, _ parameters: [PostgresValue] = []) throws(PostgresError) -> PostgresRows {
        guard let handle else { throw PostgresError(kind: .connection, message: "the connection is closed", sql: sql) }
        let wire = parameters.map(\.wireBytes)
        let buffers: [UnsafeMutablePointer<CChar>?] = wire.map { bytes in
            guard let bytes else { return nil }
            let copy = UnsafeMutablePointer<CChar>.allocate(capacity: max(bytes.count, 1))
            bytes.withUnsafeBytes { source in
                if let base = source.baseAddress { UnsafeMutableRawPointer(copy).copyMemory(from: base, byteCount: source.count) }
            }
            return copy
        }
        defer { buffers.forEach { $0?.deallocate() } }
        let values: [UnsafePointer<CChar>?] = buffers.map { $0.map { UnsafePointer($0) } }
        let types: [Oid] = parameters.map { Oid($0.typeOID) }
        let lengths: [Int32] = wire.map { Int32($0?.count ?? 0) }
        let formats: [Int32] = parameters.map(\.format)
        guard let result = PQexecParams(handle, sql, Int32(parameters.count), types, values, lengths, formats, 0) else {
            throw lastFailure(sql)
        }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK else { throw failure(of: result, sql: sql) }
        let rowCount = Int(PQntuples(result))
        let columnCount = Int(PQnfields(result))
        var rows: [[String?]] = []
        rows.reserveCapacity(rowCount)
        for r in 0..<rowCount {
            var row: [String?] = []
            row.reserveCapacity(columnCount)
            for c in 0..<columnCount {
                if PQgetisnull(result, Int32(r), Int32(c)) != 0 {
                    row.append(nil)
                } else {
                    row.append(String(cString: PQgetvalue(result, Int32(r), Int32(c))))
                }
            }
            rows.append(row)
        }
        let affected = Int(String(cString: PQcmdTuples(result))) ?? 0
        return PostgresRows(rows: rows, affected: affected)
    }

    /// The error of a failed `result`: `.connection` when the link is gone, else `.query` with
    /// the server's SQLSTATE.
    func failure(of result: OpaquePointer, sql: String) -> PostgresError {
        let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
        let message = Self.oneLine(String(cString: PQresultErrorMessage(result)))
        let kind: PostgresError.Kind = handle.map { PQstatus($0) == CONNECTION_OK } == true ? .query : .connection
        return PostgresError(kind: kind, sqlState: state, message: message, sql: sql)
    }

    /// The connection's last error, when libpq gave no result at all (out of memory, or the
    /// link is gone).
    func lastFailure(_ sql: String) -> PostgresError {
        let message = handle.map { Self.oneLine(String(cString: PQerrorMessage($0))) } ?? "the connection is closed"
        return PostgresError(kind: .connection, message: message, sql: sql)
    }

    /// Runs `body` in one transaction: `BEGIN` … `COMMIT`, or `ROLLBACK` when it throws (a
    /// rollback on a dead link is not attempted: the server rolls back what it never saw
    /// committed).
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            if isConnected { _ = try? execute("ROLLBACK") }
            throw error
        }
    }

    /// Whether libpq's reason for a failed connect is TLS refusing the server or the settings
    /// for it (`sslmode=verify-ca`/`verify-full`): a server certificate not signed by the root
    /// certificate, a name that does not match the host, a root certificate file that is not
    /// there, a server without TLS. Waiting does not mend these: the URL, the CA file or head
    /// office's certificate must change. libpq's words (fe-secure-openssl.c, fe-connect.c).
    static func isCertificateRefusal(_ reason: String) -> Bool {
        [
            "certificate verify failed", "does not match host name", "root certificate file",
            "could not read root certificate", "server does not support SSL", "server certificate for",
        ].contains { reason.contains($0) }
    }

    /// libpq's messages end with a newline and may span lines: one line for logs.
    static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters() }.joined(separator: " ")
    }
}

extension Substring {
    /// Without leading and trailing spaces and tabs.
    fileprivate func trimmingCharacters() -> String {
        var s = self[...]
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return String(s)
    }
}
