/// A statement parameter, always passed as a parameter (`PQexecParams`), never spliced into
/// SQL. Each case names its PostgreSQL type, so the server never guesses: `int8`, `text`,
/// `bytea` (sent in binary format, the bytes as they are), `bool`. `nil` is SQL NULL.
public enum PostgresValue: Sendable, Equatable {
    case int(Int64?)
    case text(String?)
    case bytes([UInt8]?)
    case bool(Bool?)
    /// A one-dimensional array in PostgreSQL's text form, with its array type's OID; made by
    /// `PostgresValue.intArray(_:)`, `textArray(_:)`, … (PostgresArray.swift).
    case array(typeOID: UInt32, literal: String)

    /// The type's OID (`pg_type.oid`): int8 20, text 25, bytea 17, bool 16; an array its own.
    var typeOID: UInt32 {
        switch self {
        case .int: return 20
        case .text: return 25
        case .bytes: return 17
        case .bool: return 16
        case .array(let oid, _): return oid
        }
    }

    /// 1 (binary) for bytea, 0 (text) for the others.
    var format: Int32 {
        if case .bytes = self { return 1 }
        return 0
    }

    /// The value's bytes as libpq takes them (text: NUL-terminated), or nil for NULL.
    var wireBytes: [UInt8]? {
        switch self {
        case .int(let v): return v.map { Array("\($0)".utf8) + [0] }
        case .text(let v): return v.map { Array($0.utf8) + [0] }
        case .bytes(let v): return v
        case .bool(let v): return v.map { Array(($0 ? "t" : "f").utf8) + [0] }
        case .array(_, let literal): return Array(literal.utf8) + [0]
        }
    }
}

/// The rows of a statement's answer, in text format: each value as PostgreSQL prints it, nil
/// for NULL.
public struct PostgresRows: Sendable {
    /// The rows, each a list of column values.
    public var rows: [[String?]]
    /// Rows a command changed (`INSERT`, `UPDATE`), from `PQcmdTuples`; 0 when it says nothing.
    public var affected: Int

    /// The rows and the count of changed rows.
    public init(rows: [[String?]], affected: Int) {
        self.rows = rows
        self.affected = affected
    }

    /// Column `column` of row `row` as an integer, or nil (NULL or not an integer).
    public func int(_ row: Int, _ column: Int) -> Int64? {
        rows[row][column].flatMap { Int64($0) }
    }

    /// Column `column` of row `row` as text, or nil for NULL.
    public func text(_ row: Int, _ column: Int) -> String? { rows[row][column] }

    /// Column `column` of row `row`, a `bytea` in PostgreSQL's hex output (`\x0a1b…`), as bytes;
    /// nil for NULL or text that is not hex output.
    public func bytes(_ row: Int, _ column: Int) -> [UInt8]? {
        guard let text = rows[row][column] else { return nil }
        return Self.decodeHex(text)
    }

    /// The bytes of a `bytea` printed as `\x` followed by hex digits; nil otherwise.
    static func decodeHex(_ text: String) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count >= 2, utf8[0] == UInt8(ascii: "\\"), utf8[1] == UInt8(ascii: "x"), utf8.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity((utf8.count - 2) / 2)
        var i = 2
        while i < utf8.count {
            guard let hi = hexDigit(utf8[i]), let lo = hexDigit(utf8[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    private static func hexDigit(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
