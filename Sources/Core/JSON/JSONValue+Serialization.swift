extension JSONValue {
    /// Compact JSON text for this value.
    public func serialized() -> String {
        String(decoding: serializedBytes(), as: UTF8.self)
    }

    /// Compact JSON bytes for this value (UTF-8), built in one byte buffer.
    public func serializedBytes() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(128)
        write(to: &out)
        return out
    }

    /// How many bytes `serializedBytes()` would give, without building them.
    public var serializedByteCount: Int {
        switch self {
        case .null: return 4
        case .bool(let b): return b ? 4 : 5
        case .int(let v): return JSONValue.decimalLength(v)
        case .double: return serializedBytes().count
        case .string(let s): return JSONValue.stringByteCount(s)
        case .array(let a):
            return 2 + max(0, a.count - 1) + a.reduce(0) { $0 + $1.serializedByteCount }
        case .object(let o):
            return 2 + max(0, o.members.count - 1)
                + o.members.reduce(0) { $0 + JSONValue.stringByteCount($1.key) + 1 + $1.value.serializedByteCount }
        }
    }

    /// Appends this value's compact JSON (what `serializedBytes()` gives) to `out`: for a caller
    /// that writes a larger text member by member, with no `JSONObject` built for it.
    public func appendSerialized(to out: inout [UInt8]) { write(to: &out) }

    /// Appends `s` as a JSON string, quoted and escaped as `serializedBytes()` writes it.
    public static func appendSerialized(string s: String, to out: inout [UInt8]) { writeString(s, to: &out) }

    /// Appends `v` in decimal, as `serializedBytes()` writes an integer, with no `String` made.
    public static func appendSerialized(int v: Int64, to out: inout [UInt8]) {
        if v < 0 { out.append(UInt8(ascii: "-")) }
        var m = v.magnitude
        // 20 digits hold any UInt64.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var at = 20
            repeat {
                at -= 1
                digits[at] = UInt8(truncatingIfNeeded: m % 10) + UInt8(ascii: "0")
                m /= 10
            } while m > 0
            out.append(contentsOf: UnsafeBufferPointer(rebasing: digits[at...]))
        }
    }

    func write(to out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .int(let v): JSONValue.appendSerialized(int: v, to: &out)
        case .double(let d):
            if d.rounded() == d && abs(d) < 1e15 {
                out.append(contentsOf: String(Int64(d)).utf8)
            } else {
                out.append(contentsOf: "\(d)".utf8)
            }
        case .string(let s): JSONValue.writeString(s, to: &out)
        case .array(let a):
            out.append(UInt8(ascii: "["))
            for (k, v) in a.enumerated() {
                if k > 0 { out.append(UInt8(ascii: ",")) }
                v.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let o):
            out.append(UInt8(ascii: "{"))
            for (k, m) in o.members.enumerated() {
                if k > 0 { out.append(UInt8(ascii: ",")) }
                JSONValue.writeString(m.key, to: &out)
                out.append(UInt8(ascii: ":"))
                m.value.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// The escape for one byte of a string, or nil when it goes as it is. Control characters
    /// have their short escapes or `\u00xx`; `"` and `\` are escaped.
    private static func escape(_ b: UInt8) -> StaticString? {
        switch b {
        case 0x22: return "\\\""
        case 0x5C: return "\\\\"
        case 0x0A: return "\\n"
        case 0x0D: return "\\r"
        case 0x09: return "\\t"
        case 0x08: return "\\b"
        case 0x0C: return "\\f"
        default: return nil
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// Writes `s` as a JSON string: runs of bytes that need no escape are copied whole. U+2028
    /// and U+2029 (E2 80 A8/A9 in UTF-8) are escaped too, as JavaScript needs.
    static func writeString(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var s = s
        s.withUTF8 { bytes in
            var run = 0
            var i = 0
            let n = bytes.count
            while i < n {
                let b = bytes[i]
                if b >= 0x20 && b != 0x22 && b != 0x5C && b != 0xE2 {
                    i += 1
                    continue
                }
                if b == 0xE2 {
                    guard i + 2 < n, bytes[i + 1] == 0x80, bytes[i + 2] == 0xA8 || bytes[i + 2] == 0xA9 else {
                        i += 1
                        continue
                    }
                    out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<i]))
                    out.append(contentsOf: bytes[i + 2] == 0xA8 ? "\\u2028".utf8 : "\\u2029".utf8)
                    i += 3
                    run = i
                    continue
                }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<i]))
                if let e = escape(b) {
                    e.withUTF8Buffer { out.append(contentsOf: $0) }
                } else {
                    out.append(contentsOf: "\\u00".utf8)
                    out.append(hexDigits[Int(b >> 4)])
                    out.append(hexDigits[Int(b & 0x0F)])
                }
                i += 1
                run = i
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<n]))
        }
        out.append(UInt8(ascii: "\""))
    }

    /// The bytes `writeString` gives for `s`.
    static func stringByteCount(_ s: String) -> Int {
        var count = 2
        var s = s
        s.withUTF8 { bytes in
            var i = 0
            let n = bytes.count
            while i < n {
                let b = bytes[i]
                if b >= 0x20 && b != 0x22 && b != 0x5C && b != 0xE2 {
                    count += 1
                } else if b == 0xE2, i + 2 < n, bytes[i + 1] == 0x80, bytes[i + 2] == 0xA8 || bytes[i + 2] == 0xA9 {
                    count += 6
                    i += 2
                } else if b == 0xE2 {
                    count += 1
                } else {
                    count += escape(b) != nil ? 2 : 6
                }
                i += 1
            }
        }
        return count
    }

    /// Digits (and sign) of `v` in decimal.
    static func decimalLength(_ v: Int64) -> Int {
        var n = v < 0 ? 2 : 1
        var m = v.magnitude
        while m >= 10 {
            m /= 10
            n += 1
        }
        return n
    }
}
