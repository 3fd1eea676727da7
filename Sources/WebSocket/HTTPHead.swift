/// The start line and header fields of an HTTP/1.1 message head (RFC 7230 section 3), as used
/// by both sides of the opening handshake. Parsing is strict: lines end in CRLF, field names are
/// tokens with no whitespace before the colon, obsolete line folding is refused.
struct HTTPHead {
    /// The request line or status line, without its CRLF.
    var startLine: String
    /// Header fields in arrival order, names as sent, values without surrounding whitespace.
    var fields: [(name: String, value: String)]

    /// Why a head could not be parsed.
    struct SyntaxError: Error {
        var message: String
    }

    private static let cr = UInt8(ascii: "\r")
    private static let lf = UInt8(ascii: "\n")

    /// The index just past the `CRLF CRLF` that ends the head, searching from `start`.
    ///
    /// Callers keep the previous `scanned` position so every byte is looked at a bounded number
    /// of times however the head is chunked.
    static func endOfHead(in buffer: [UInt8], scanningFrom start: Int) -> Int? {
        var index = max(0, start - 3)
        while index + 3 < buffer.count {
            if buffer[index + 3] != lf {
                index += 1
                continue
            }
            if buffer[index] == cr && buffer[index + 1] == lf && buffer[index + 2] == cr {
                return index + 4
            }
            index += 1
        }
        return nil
    }

    /// The index just past the first `CRLF` in `buffer`, if there is one.
    static func endOfFirstLine(in buffer: [UInt8]) -> Int? {
        var index = 0
        while index + 1 < buffer.count {
            if buffer[index] == cr && buffer[index + 1] == lf {
                return index + 2
            }
            index += 1
        }
        return nil
    }

    /// Parses a complete head, `bytes` ending with its final `CRLF CRLF`.
    static func parse(_ bytes: ArraySlice<UInt8>) throws -> HTTPHead {
        var lines: [ArraySlice<UInt8>] = []
        var lineStart = bytes.startIndex
        var index = bytes.startIndex
        // "HTTP-message = start-line *( header-field CRLF ) CRLF" (RFC 7230 3): every line ends
        // in CRLF; a bare CR or LF inside a line is refused.
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == cr {
                guard index + 1 < bytes.endIndex, bytes[index + 1] == lf else {
                    throw SyntaxError(message: "bare CR in header block")
                }
                lines.append(bytes[lineStart..<index])
                index += 2
                lineStart = index
            } else if byte == lf {
                throw SyntaxError(message: "bare LF in header block")
            } else {
                index += 1
            }
        }
        // The head ends with an empty line; drop it.
        guard let last = lines.popLast(), last.isEmpty, let first = lines.first else {
            throw SyntaxError(message: "header block does not end with an empty line")
        }
        guard !first.isEmpty, first.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else {
            throw SyntaxError(message: "start line is empty or has control or non-ASCII bytes")
        }
        var fields: [(name: String, value: String)] = []
        fields.reserveCapacity(lines.count - 1)
        for line in lines.dropFirst() {
            fields.append(try parseField(line))
        }
        return HTTPHead(startLine: String(decoding: first, as: UTF8.self), fields: fields)
    }

    /// `header-field = field-name ":" OWS field-value OWS` (RFC 7230 3.2).
    private static func parseField(_ line: ArraySlice<UInt8>) throws -> (name: String, value: String) {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
            // RFC 7230 3.2.4: "A server that receives an obs-fold in a request message [...]
            // MUST either reject the message by sending a 400 (Bad Request)" — a folded line
            // starts with whitespace and has no colon of its own, or a non-token name.
            throw SyntaxError(message: "header line without a colon")
        }
        let name = line[line.startIndex..<colon]
        // RFC 7230 3.2.4: "No whitespace is allowed between the header field-name and colon."
        guard !name.isEmpty, name.allSatisfy(isTokenCharacter) else {
            throw SyntaxError(message: "invalid header field name")
        }
        var value = line[(colon + 1)...]
        while let first = value.first, first == 0x20 || first == 0x09 { value = value.dropFirst() }
        while let last = value.last, last == 0x20 || last == 0x09 { value = value.dropLast() }
        guard value.allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }) else {
            throw SyntaxError(message: "control character in header field value")
        }
        return (String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self))
    }

    /// `tchar` of RFC 7230 3.2.6.
    static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"),
             UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
             UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// Whether `text` is a non-empty RFC 7230 token.
    static func isToken(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy(isTokenCharacter)
    }

    /// Every value of the fields named `name` (case-insensitively), in order.
    func values(_ name: String) -> [String] {
        let wanted = name.lowercased()
        return fields.compactMap { $0.name.lowercased() == wanted ? $0.value : nil }
    }

    /// The comma-separated elements of every field named `name`, whitespace trimmed, empty
    /// elements dropped (RFC 7230 7: "a recipient MUST accept lists that contain empty list
    /// elements" and ignore them).
    func listElements(_ name: String) -> [String] {
        values(name).flatMap { value in
            value.split(separator: ",", omittingEmptySubsequences: false).compactMap { element in
                let trimmed = element.trimmingOWS()
                return trimmed.isEmpty ? nil : trimmed
            }
        }
    }

    /// Whether a field named `name` lists `token`, compared ASCII case-insensitively.
    func listContains(_ name: String, token: String) -> Bool {
        let wanted = token.lowercased()
        return listElements(name).contains { $0.lowercased() == wanted }
    }
}

extension Substring {
    /// The text without leading and trailing spaces and horizontal tabs.
    func trimmingOWS() -> String {
        var slice = self[...]
        while let first = slice.first, first == " " || first == "\t" { slice = slice.dropFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice = slice.dropLast() }
        return String(slice)
    }
}
