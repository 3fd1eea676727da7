/// An error found while parsing JSON text, with the byte offset where it was found.
public struct JSONParseError: Error, Equatable, CustomStringConvertible {
    /// What is wrong.
    public var message: String
    /// Byte offset into the input.
    public var offset: Int
    /// True when the text broke a limit of the parser (members per object, nesting depth)
    /// rather than the JSON grammar: the sender's message is too large, not malformed.
    public var isLimitExceeded = false
    /// The message and the offset, as "expected ':' at byte 12".
    public var description: String { "\(message) at byte \(offset)" }
}

/// A strict RFC 8259 JSON parser with a nesting limit. Pure; never traps on bad input.
public struct JSONParser {
    /// Deepest nesting of arrays and objects accepted.
    public static let maxDepth = 64
    /// Most members per object in a message from a peer (a terminal, a slave or the master):
    /// an order has ten known members and a few unknown ones, so 256 leaves room while a
    /// message with tens of thousands of members is refused after its 257th, in microseconds.
    public static let peerMaxMembersPerObject = 256

    /// Most members accepted in one object of the text being parsed.
    private let maxMembersPerObject: Int

    private let bytes: [UInt8]
    private var i = 0
    private var depth = 0
    /// Member keys compared and index slots inspected so far, over every object of the text:
    /// the work that grows with the number of members (see `JSONMemberIndex`).
    private var keyProbes = 0

    private init(_ bytes: [UInt8], maxMembersPerObject: Int) {
        self.bytes = bytes
        self.maxMembersPerObject = maxMembersPerObject
    }

    /// Parses one JSON text; anything but white space after it is an error. An object with
    /// more than `maxMembersPerObject` members is an error too (`isLimitExceeded`), found as
    /// soon as the member after the last one allowed begins.
    public static func parse(_ bytes: [UInt8], maxMembersPerObject: Int = .max) throws -> JSONValue {
        try parseCountingKeyProbes(bytes, maxMembersPerObject: maxMembersPerObject).value
    }

    /// Parses one JSON text and says how many member keys and index slots it inspected to find
    /// repeated keys and build the objects; tests use the count to check the work is linear.
    static func parseCountingKeyProbes(
        _ bytes: [UInt8], maxMembersPerObject: Int = .max
    ) throws -> (value: JSONValue, keyProbes: Int) {
        var p = JSONParser(bytes, maxMembersPerObject: maxMembersPerObject)
        p.skipSpace()
        let v = try p.value()
        p.skipSpace()
        if p.i != p.bytes.count { throw p.error("unexpected data after the JSON value") }
        return (v, p.keyProbes)
    }

    /// Parses one JSON text from a string, with the same limits.
    public static func parse(_ text: String, maxMembersPerObject: Int = .max) throws -> JSONValue {
        try parse(Array(text.utf8), maxMembersPerObject: maxMembersPerObject)
    }

    private func error(_ m: String) -> JSONParseError { JSONParseError(message: m, offset: i) }

    private func limitError(_ m: String) -> JSONParseError {
        JSONParseError(message: m, offset: i, isLimitExceeded: true)
    }

    private mutating func skipSpace() {
        while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x0A || bytes[i] == 0x0D || bytes[i] == 0x09 {
            i += 1
        }
    }

    private mutating func value() throws -> JSONValue {
        guard i < bytes.count else { throw error("unexpected end of JSON") }
        switch bytes[i] {
        case UInt8(ascii: "{"): return try object()
        case UInt8(ascii: "["): return try array()
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw error("unexpected character")
        }
    }

    private mutating func literal(_ word: String) throws {
        let w = Array(word.utf8)
        guard i + w.count <= bytes.count else { throw error("unexpected end of JSON") }
        for k in 0..<w.count where bytes[i + k] != w[k] { throw error("invalid literal") }
        i += w.count
    }

    private mutating func enter() throws {
        depth += 1
        if depth > JSONParser.maxDepth { throw limitError("JSON nested deeper than \(JSONParser.maxDepth) levels") }
    }

    private mutating func object() throws -> JSONValue {
        try enter()
        i += 1
        var obj = JSONObject()
        skipSpace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; depth -= 1; return .object(obj) }
        while true {
            skipSpace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw error("expected a member name") }
            guard obj.members.count < maxMembersPerObject else {
                throw limitError("object has more than \(maxMembersPerObject) members")
            }
            let key = try string()
            // RFC 8259 section 4: "The names within an object SHOULD be unique." A repeated name
            // is refused: peers disagree on which value wins.
            if !obj.appendIfAbsent(key, .null, probes: &keyProbes) { throw error("duplicate member \"\(key)\"") }
            skipSpace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw error("expected ':'") }
            i += 1
            skipSpace()
            obj.setLastValue(try value())
            skipSpace()
            guard i < bytes.count else { throw error("unexpected end of JSON") }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            if bytes[i] == UInt8(ascii: "}") { i += 1; break }
            throw error("expected ',' or '}'")
        }
        depth -= 1
        return .object(obj)
    }

    private mutating func array() throws -> JSONValue {
        try enter()
        i += 1
        var out: [JSONValue] = []
        skipSpace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; depth -= 1; return .array(out) }
        while true {
            skipSpace()
            out.append(try value())
            skipSpace()
            guard i < bytes.count else { throw error("unexpected end of JSON") }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            if bytes[i] == UInt8(ascii: "]") { i += 1; break }
            throw error("expected ',' or ']'")
        }
        depth -= 1
        return .array(out)
    }

    private mutating func number() throws -> JSONValue {
        let start = i
        var isInteger = true
        if bytes[i] == UInt8(ascii: "-") { i += 1 }
        guard i < bytes.count else { throw error("invalid number") }
        if bytes[i] == UInt8(ascii: "0") {
            i += 1
        } else if (UInt8(ascii: "1")...UInt8(ascii: "9")).contains(bytes[i]) {
            while i < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[i]) { i += 1 }
        } else {
            throw error("invalid number")
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            isInteger = false
            i += 1
            let d = i
            while i < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[i]) { i += 1 }
            if i == d { throw error("invalid number") }
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            isInteger = false
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            let d = i
            while i < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[i]) { i += 1 }
            if i == d { throw error("invalid number") }
        }
        // The common case, an integer of at most 18 digits, is read straight from the bytes:
        // it cannot overflow 64 bits, so no text is made for it.
        if isInteger {
            let negative = bytes[start] == UInt8(ascii: "-")
            let digitsStart = negative ? start + 1 : start
            if i - digitsStart <= 18 {
                var v: Int64 = 0
                for k in digitsStart..<i { v = v &* 10 &+ Int64(bytes[k] &- UInt8(ascii: "0")) }
                return .int(negative ? -v : v)
            }
        }
        let text = String(decoding: bytes[start..<i], as: UTF8.self)
        if isInteger, let v = Int64(text) { return .int(v) }
        guard let d = Double(text), d.isFinite else { throw error("number out of range") }
        return .double(d)
    }

    private mutating func hex4() throws -> UInt32 {
        guard i + 4 <= bytes.count else { throw error("truncated \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[i]
            let d: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt32(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = UInt32(c - UInt8(ascii: "A") + 10)
            default: throw error("invalid \\u escape")
            }
            v = v << 4 | d
            i += 1
        }
        return v
    }

    private mutating func string() throws -> String {
        i += 1 // opening quote
        var runStart = i
        // Most strings have no escape: they are made from the input's bytes at once, with no
        // buffer of their own in between, and when every byte is ASCII (an order's uuid, names,
        // dates) there is nothing to validate.
        var nonASCII: UInt8 = 0
        while i < bytes.count {
            let c = bytes[i]
            if c == UInt8(ascii: "\"") {
                let s = bytes.withUnsafeBufferPointer {
                    let run = UnsafeBufferPointer(rebasing: $0[runStart..<i])
                    return nonASCII < 0x80 ? String(decoding: run, as: UTF8.self) : String(validating: run, as: UTF8.self)
                }
                i += 1
                guard let s else { throw error("invalid UTF-8 in string") }
                return s
            }
            if c < 0x20 { throw error("control character in string") }
            if c == UInt8(ascii: "\\") { break }
            nonASCII |= c
            i += 1
        }
        var out: [UInt8] = []
        while true {
            guard i < bytes.count else { throw error("unterminated string") }
            let c = bytes[i]
            if c == UInt8(ascii: "\"") {
                out.append(contentsOf: bytes[runStart..<i])
                i += 1
                break
            }
            if c < 0x20 { throw error("control character in string") }
            if c != UInt8(ascii: "\\") { i += 1; continue }
            out.append(contentsOf: bytes[runStart..<i])
            i += 1
            guard i < bytes.count else { throw error("unterminated string") }
            let e = bytes[i]
            i += 1
            switch e {
            case UInt8(ascii: "\""): out.append(0x22)
            case UInt8(ascii: "\\"): out.append(0x5C)
            case UInt8(ascii: "/"): out.append(0x2F)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try hex4()
                if (0xD800...0xDBFF).contains(scalar) {
                    guard i + 2 <= bytes.count, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") else {
                        throw error("unpaired surrogate in \\u escape")
                    }
                    i += 2
                    let low = try hex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw error("unpaired surrogate in \\u escape") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00...0xDFFF).contains(scalar) {
                    throw error("unpaired surrogate in \\u escape")
                }
                guard let u = Unicode.Scalar(scalar) else { throw error("invalid \\u escape") }
                out.append(contentsOf: Array(String(Character(u)).utf8))
            default:
                throw error("invalid escape")
            }
            runStart = i
        }
        guard let s = String(validating: out, as: UTF8.self) else { throw error("invalid UTF-8 in string") }
        return s
    }
}
