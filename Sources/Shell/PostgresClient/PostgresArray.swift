/// Column arrays as one parameter each, so that a batch of rows is a handful of parameters
/// (`INSERT … SELECT … FROM unnest($1::bigint[], $2::text[], …)`) instead of one per value.
/// The arrays go in PostgreSQL's text form: every element double-quoted with `\` and `"`
/// escaped, NULL unquoted.
extension PostgresValue {
    /// `bigint[]` (int8[], OID 1016).
    public static func intArray(_ values: [Int64?]) -> PostgresValue {
        .array(typeOID: 1016, literal: PostgresArrayText.literal(values.map { $0.map { "\($0)" } }))
    }

    /// `text[]` (OID 1009).
    public static func textArray(_ values: [String?]) -> PostgresValue {
        .array(typeOID: 1009, literal: PostgresArrayText.literal(values))
    }

    /// `bytea[]` (OID 1001), each element in bytea's hex form.
    public static func bytesArray(_ values: [[UInt8]?]) -> PostgresValue {
        .array(typeOID: 1001, literal: PostgresArrayText.literal(values.map { $0.map(PostgresArrayText.byteaHex) }))
    }

    /// `boolean[]` (OID 1000).
    public static func boolArray(_ values: [Bool?]) -> PostgresValue {
        .array(typeOID: 1000, literal: PostgresArrayText.literal(values.map { $0.map { $0 ? "t" : "f" } }))
    }
}

/// PostgreSQL's text form of a one-dimensional array (`{"a","b\"c",NULL}`).
public enum PostgresArrayText {
    /// The literal of `elements`, each quoted and escaped; nil is NULL.
    public static func literal(_ elements: [String?]) -> String {
        var out: [UInt8] = [UInt8(ascii: "{")]
        out.reserveCapacity(elements.count * 16)
        for (i, element) in elements.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            guard let element else {
                out += Array("NULL".utf8)
                continue
            }
            out.append(UInt8(ascii: "\""))
            for c in element.utf8 {
                if c == UInt8(ascii: "\"") || c == UInt8(ascii: "\\") { out.append(UInt8(ascii: "\\")) }
                out.append(c)
            }
            out.append(UInt8(ascii: "\""))
        }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }

    /// A bytea's hex input form, `\x` and two lower-case digits a byte.
    public static func byteaHex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = [UInt8(ascii: "\\"), UInt8(ascii: "x")]
        out.reserveCapacity(2 + bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
