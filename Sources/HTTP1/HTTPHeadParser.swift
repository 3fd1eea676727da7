/// Framing and field parsing shared by the request and response parsers (RFC 9112).
enum HTTPHeadParser {
    static let cr: UInt8 = 0x0D
    static let lf: UInt8 = 0x0A
    static let space: UInt8 = 0x20
    static let tab: UInt8 = 0x09
    static let colon: UInt8 = 0x3A

    /// The number of bytes of empty lines before the start line, which are skipped; the first
    /// `knownEmpty` bytes were already found to be CR or LF.
    ///
    /// RFC 9112 2.2: "a server that is expecting to receive and parse a request-line SHOULD
    /// ignore at least one empty line (CRLF) received prior to the request-line."
    static func leadingEmptyLineBytes(_ buffer: ArraySlice<UInt8>, knownEmpty: Int = 0) -> Int {
        var index = buffer.startIndex + min(knownEmpty, buffer.count)
        while index < buffer.endIndex && (buffer[index] == cr || buffer[index] == lf) {
            index += 1
        }
        return index - buffer.startIndex
    }

    /// Searches `buffer[from...]` for the empty line ending a header block and returns the
    /// offset (from `buffer.startIndex`) just past it, or `nil`.
    ///
    /// RFC 9112 2.2: "a recipient MAY recognize a single LF as a line terminator and ignore
    /// any preceding CR", so both `\n\r\n` and `\n\n` end the block.
    static func headEnd(in buffer: ArraySlice<UInt8>, from offset: Int) -> Int? {
        var index = buffer.startIndex + max(0, offset)
        while index < buffer.endIndex {
            if buffer[index] == lf {
                let next = index + 1
                if next < buffer.endIndex && buffer[next] == lf {
                    return next + 1 - buffer.startIndex
                }
                if next + 1 < buffer.endIndex && buffer[next] == cr && buffer[next + 1] == lf {
                    return next + 2 - buffer.startIndex
                }
            }
            index += 1
        }
        return nil
    }

    /// The lines of a header block (without CR LF), ending at the first empty line.
    static func lines(_ head: ArraySlice<UInt8>) -> [ArraySlice<UInt8>] {
        var result: [ArraySlice<UInt8>] = []
        var start = head.startIndex
        var index = head.startIndex
        while index < head.endIndex {
            if head[index] == lf {
                var end = index
                if end > start && head[end - 1] == cr {
                    end -= 1
                }
                if end == start {
                    break
                }
                result.append(head[start..<end])
                start = index + 1
            }
            index += 1
        }
        return result
    }

    /// RFC 9110 5.6.2: `tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." /
    /// "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA`
    static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    static func isToken(_ bytes: ArraySlice<UInt8>) -> Bool {
        !bytes.isEmpty && bytes.allSatisfy(isTokenCharacter)
    }

    /// Parses the field lines after the start line into headers.
    static func fields(_ lines: ArraySlice<ArraySlice<UInt8>>, error: (String) -> HTTPError) throws -> HTTPHeaders {
        var headers = HTTPHeaders()
        for line in lines {
            // RFC 9112 5.2: "A server that receives an obs-fold in a request message that is not
            // within a "message/http" container MUST either reject the message by sending a 400
            // (Bad Request) [...]"
            if line.first == space || line.first == tab {
                throw error("obsolete line folding is not accepted")
            }
            guard let colonIndex = line.firstIndex(of: colon) else {
                throw error("header line without a colon")
            }
            // RFC 9112 5.1: "No whitespace is allowed between the field name and colon."
            let name = line[line.startIndex..<colonIndex]
            guard isToken(name) else {
                throw error("invalid header field name")
            }
            var value = line[(colonIndex + 1)...]
            while let first = value.first, first == space || first == tab { value = value.dropFirst() }
            while let last = value.last, last == space || last == tab { value = value.dropLast() }
            // RFC 9110 5.5: "Field values containing CR, LF, or NUL characters are invalid and
            // dangerous, due to the varying ways that implementations might parse and interpret
            // those characters; a recipient of CR, LF, or NUL within a field value MUST either
            // reject the message or replace each of those characters with SP"
            if value.contains(where: { $0 == cr || $0 == lf || $0 == 0 }) {
                throw error("control character in a header field value")
            }
            headers.add(name: String(decoding: name, as: UTF8.self), value: String(decoding: value, as: UTF8.self))
        }
        return headers
    }

    /// The `Content-Length`, if present.
    ///
    /// RFC 9110 8.6: "Content-Length = 1*DIGIT"; RFC 9112 6.3: "If a message is received
    /// without Transfer-Encoding and with an invalid Content-Length header field, then the
    /// message framing is invalid and the recipient MUST treat it as an unrecoverable error".
    /// Repeated identical values (`42, 42`) are accepted, as RFC 9110 8.6 allows.
    static func contentLength(_ headers: HTTPHeaders, error: (String) -> HTTPError) throws -> Int? {
        let values = headers.values("Content-Length").flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }
        guard !values.isEmpty else {
            return nil
        }
        var result: Int?
        for raw in values {
            let text = String(raw).trimmingHTTPWhitespace()
            guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                  let value = Int(text) else {
                throw error("invalid Content-Length")
            }
            if let result, result != value {
                throw error("conflicting Content-Length values")
            }
            result = value
        }
        return result
    }

    /// Parses `HTTP/x.y`.
    static func version(_ bytes: ArraySlice<UInt8>) -> HTTPVersion? {
        let text = Array(bytes)
        guard text.count == 8, Array(text[0..<5]) == Array("HTTP/".utf8), text[6] == UInt8(ascii: "."),
              (0x30...0x39).contains(text[5]), (0x30...0x39).contains(text[7]) else {
            return nil
        }
        return HTTPVersion(major: Int(text[5] - 0x30), minor: Int(text[7] - 0x30))
    }
}

/// An HTTP version such as 1.1.
public struct HTTPVersion: Equatable, Hashable, Sendable, CustomStringConvertible {
    /// The major version (1).
    public var major: Int
    /// The minor version (0 or 1).
    public var minor: Int

    /// Creates a version.
    public init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }

    /// HTTP/1.1.
    public static let http1_1 = HTTPVersion(major: 1, minor: 1)
    /// HTTP/1.0.
    public static let http1_0 = HTTPVersion(major: 1, minor: 0)

    /// `HTTP/1.1`.
    public var description: String { "HTTP/\(major).\(minor)" }
}
