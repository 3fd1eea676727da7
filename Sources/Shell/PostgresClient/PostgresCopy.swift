internal import CLibPQ

/// Rows in the text format of `COPY … FROM STDIN` (PostgreSQL, COPY, "Text Format"): "each row
/// of the table [is] one line", "columns in a row are separated by the delimiter character"
/// (tab), "\N" is NULL, and "backslash characters (\) can be used in the COPY data to quote data
/// characters that might otherwise be taken as row or column delimiters": a backslash, newline,
/// carriage return and tab in a value go as `\\`, `\n`, `\r`, `\t`. Built off the connection's
/// thread, sent by `PostgresConnection.copyIn`.
public struct PostgresCopyText: Sendable, Equatable {
    /// The bytes so far: whole rows once `endRow()` was called after each.
    public private(set) var bytes: [UInt8] = []
    /// Rows ended.
    public private(set) var rows = 0
    private var fieldsInRow = 0

    /// No rows; `capacity` bytes reserved.
    public init(capacity: Int = 0) { bytes.reserveCapacity(capacity) }

    /// A text value, escaped; nil is NULL.
    public mutating func text(_ value: String?) {
        separate()
        guard let value else { return null() }
        for c in value.utf8 {
            switch c {
            case UInt8(ascii: "\\"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case UInt8(ascii: "\n"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case UInt8(ascii: "\r"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case UInt8(ascii: "\t"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            default: bytes.append(c)
            }
        }
    }

    /// An integer in decimal; nil is NULL.
    public mutating func int(_ value: Int64?) {
        separate()
        guard let value else { return null() }
        bytes += Array(String(value).utf8)
    }

    /// A boolean, `t` or `f`; nil is NULL.
    public mutating func bool(_ value: Bool?) {
        separate()
        guard let value else { return null() }
        bytes.append(UInt8(ascii: value ? "t" : "f"))
    }

    /// A `bytea` in its hex input form (`\x` and two digits a byte), its backslash doubled for
    /// COPY; nil is NULL.
    public mutating func bytea(_ value: [UInt8]?) {
        separate()
        guard let value else { return null() }
        let digits: StaticString = "0123456789abcdef"
        bytes += [UInt8(ascii: "\\"), UInt8(ascii: "\\"), UInt8(ascii: "x")]
        digits.withUTF8Buffer { d in
            for b in value {
                bytes.append(d[Int(b >> 4)])
                bytes.append(d[Int(b & 0x0f)])
            }
        }
    }

    /// Ends the row.
    public mutating func endRow() {
        bytes.append(UInt8(ascii: "\n"))
        rows += 1
        fieldsInRow = 0
    }

    private mutating func separate() {
        if fieldsInRow > 0 { bytes.append(UInt8(ascii: "\t")) }
        fieldsInRow += 1
    }

    private mutating func null() { bytes += [UInt8(ascii: "\\"), UInt8(ascii: "N")] }
}

extension PostgresConnection {
    /// Runs `sql`, a `COPY … FROM STDIN` in text format, with `data` as its rows, and returns how
    /// many rows it copied. Errors as `execute`'s. libpq's order (its "Functions Associated with
    /// the COPY Command"): the command gives a result of status `PGRES_COPY_IN`, the rows go by
    /// `PQputCopyData`, then `PQputCopyEnd`; "After successfully calling PQputCopyEnd, call
    /// PQgetResult to obtain the final result status of the COPY command".
    @discardableResult
    public func copyIn(_ sql: String, _ data: PostgresCopyText) throws(PostgresError) -> Int {
        guard let handle else { throw PostgresError(kind: .connection, message: "the connection is closed", sql: sql) }
        guard let start = PQexec(handle, sql) else { throw lastFailure(sql) }
        let started = PQresultStatus(start)
        if started != PGRES_COPY_IN {
            defer { PQclear(start) }
            throw failure(of: start, sql: sql)
        }
        PQclear(start)
        let sent = data.bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { PQputCopyData(handle, $0.baseAddress, Int32($0.count)) }
        }
        // In blocking mode both return 1 or -1 (a dead connection); the COPY's result says why.
        if sent == 1 { _ = PQputCopyEnd(handle, nil) }
        var copied = 0
        var error: PostgresError?
        while let result = PQgetResult(handle) {
            if PQresultStatus(result) == PGRES_COPY_IN {
                // The COPY was not ended (the rows could not be sent): libpq would answer so for
                // ever. The connection is of no further use; the caller closes it.
                PQclear(result)
                error = error ?? lastFailure(sql)
                break
            }
            if PQresultStatus(result) == PGRES_COMMAND_OK {
                copied = Int(String(cString: PQcmdTuples(result))) ?? 0
            } else if error == nil {
                error = failure(of: result, sql: sql)
            }
            PQclear(result)
        }
        if let error { throw error }
        if sent != 1 { throw lastFailure(sql) }
        return copied
    }
}
