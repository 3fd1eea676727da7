/// An incremental parser for the head of an HTTP/1.x message (sans I/O): the start line and
/// the header fields up to the empty line that ends them (RFC 9112 2.1).
///
/// Every HTTP/1 head the project reads goes through this type: the local API's requests and
/// responses and both sides of the WebSocket opening handshake. They differ only in
/// ``strictness``.
///
/// Call ``parse(_:)`` with every byte received for the message so far (the slice may grow
/// between calls but must keep its start). The parser remembers how far it has scanned, so each
/// byte is looked at a bounded number of times however the head is chunked, and a head fed at
/// once or one byte at a time gives the same result. Line syntax (bare CR, bare LF when not
/// accepted) is checked as bytes arrive; the fields when the head is complete. After an error
/// the parser keeps throwing it.
public struct HTTPHeadParser: Sendable {
    /// What ``parse(_:)`` found.
    public enum Result: Sendable, Equatable {
        /// The head is not complete yet.
        case needMoreData
        /// A complete head, which used the first `consumed` bytes (its final empty line
        /// included; any bytes after it are the body or the next protocol's).
        case complete(HTTPHead, consumed: Int)
    }

    private enum State: Sendable {
        /// Before the end of the start line, which begins at offset `begin` (after any skipped
        /// empty lines); bytes before `scanned` hold no line terminator.
        case startLine(begin: Int, scanned: Int)
        /// In the field lines: the start line is at `startLine`, the current line begins at
        /// `lineBegin`, bytes before `scanned` have been checked.
        case fields(startLine: Range<Int>, lineBegin: Int, scanned: Int)
        case failed(HTTPError)
    }

    /// The line rules in force.
    public let strictness: HTTPHeadStrictness
    /// The largest head accepted, empty lines skipped before it and its final empty line
    /// included; a longer one is refused with 431.
    public let maxHeadBytes: Int
    private var state = State.startLine(begin: 0, scanned: 0)

    /// A parser with the given rules and size limit (which must be positive).
    public init(strictness: HTTPHeadStrictness, maxHeadBytes: Int) {
        precondition(maxHeadBytes > 0, "maxHeadBytes must be positive")
        self.strictness = strictness
        self.maxHeadBytes = maxHeadBytes
    }

    /// Scans `bytes`, everything received for this message so far.
    ///
    /// - Throws: ``HTTPError`` 400 for a malformed head, 431 when no head ends within
    ///   ``maxHeadBytes``.
    public mutating func parse(_ bytes: ArraySlice<UInt8>) throws(HTTPError) -> Result {
        do {
            let result = try scan(bytes)
            if case .complete = result {
                state = .startLine(begin: 0, scanned: 0)
            }
            return result
        } catch {
            state = .failed(error)
            throw error
        }
    }

    /// Scans `bytes`, everything received for this message so far.
    public mutating func parse(_ bytes: [UInt8]) throws(HTTPError) -> Result {
        try parse(bytes[...])
    }

    /// The complete start line in `bytes` (the slice last given to ``parse(_:)``) once its
    /// line terminator has arrived, so a caller can refuse a wrong request line without
    /// waiting for the rest of the head; `nil` before that.
    public func startLine(in bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        guard case .fields(let range, _, _) = state else {
            return nil
        }
        return bytes[(bytes.startIndex + range.lowerBound)..<(bytes.startIndex + range.upperBound)]
    }

    private mutating func scan(_ bytes: ArraySlice<UInt8>) throws(HTTPError) -> Result {
        let base = bytes.startIndex
        // The head must end within the limit, so nothing past it is ever scanned.
        let end = base + min(bytes.count, maxHeadBytes)
        var index: Int
        switch state {
        case .failed(let error):
            throw error
        case .startLine(_, let scanned), .fields(_, _, let scanned):
            index = base + scanned
        }
        while index < end {
            let byte = bytes[index]
            if byte == HTTPSyntax.cr {
                // RFC 9112 2.2: "A recipient of such a bare CR MUST consider that element to be
                // invalid or replace each bare CR with SP"; we refuse it.
                guard index + 1 < end else {
                    break
                }
                guard bytes[index + 1] == HTTPSyntax.lf else {
                    throw .badRequest("bare CR in the message head")
                }
                index += 1
                continue
            }
            guard byte == HTTPSyntax.lf else {
                index += 1
                continue
            }
            let crlf = index > base && bytes[index - 1] == HTTPSyntax.cr
            if !crlf && !strictness.acceptsBareLF {
                throw .badRequest("bare LF in the message head")
            }
            let lineEnd = (crlf ? index - 1 : index) - base
            let next = index + 1 - base
            switch state {
            case .failed:
                preconditionFailure("a failed parser does not scan")
            case .startLine(let begin, _):
                if lineEnd <= begin {
                    guard strictness.skipsLeadingEmptyLines else {
                        throw .badRequest("empty line before the start line")
                    }
                    state = .startLine(begin: next, scanned: next)
                } else {
                    state = .fields(startLine: begin..<lineEnd, lineBegin: next, scanned: next)
                }
            case .fields(let startLine, let lineBegin, _):
                if lineEnd <= lineBegin {
                    let head = try HTTPHeadParser.head(bytes, startLine: startLine, fieldsEnd: lineBegin)
                    return .complete(head, consumed: next)
                }
                state = .fields(startLine: startLine, lineBegin: next, scanned: next)
            }
            index += 1
        }
        switch state {
        case .failed:
            preconditionFailure("a failed parser does not scan")
        case .startLine(let begin, _):
            state = .startLine(begin: begin, scanned: index - base)
        case .fields(let startLine, let lineBegin, _):
            state = .fields(startLine: startLine, lineBegin: lineBegin, scanned: index - base)
        }
        if bytes.count >= maxHeadBytes {
            throw .headerFieldsTooLarge("message head exceeds \(maxHeadBytes) bytes")
        }
        return .needMoreData
    }

    /// Builds the head once its end is found; `fieldsEnd` is the offset of the final empty line.
    private static func head(
        _ bytes: ArraySlice<UInt8>, startLine: Range<Int>,
        fieldsEnd: Int
    ) throws(HTTPError) -> HTTPHead {
        let base = bytes.startIndex
        var headers = HTTPHeaders()
        // The scan already checked every terminator, so each LF ends a line and a CR before it
        // belongs to the terminator.
        var lineBegin = base + startLine.upperBound
        while lineBegin < base + fieldsEnd, bytes[lineBegin] != HTTPSyntax.lf {
            lineBegin += 1
        }
        lineBegin += 1
        while lineBegin < base + fieldsEnd {
            var lineEnd = lineBegin
            while bytes[lineEnd] != HTTPSyntax.lf {
                lineEnd += 1
            }
            let next = lineEnd + 1
            if lineEnd > lineBegin && bytes[lineEnd - 1] == HTTPSyntax.cr {
                lineEnd -= 1
            }
            let field = try fieldLine(bytes[lineBegin..<lineEnd])
            headers.add(name: field.name, value: field.value)
            lineBegin = next
        }
        let line = Array(bytes[(base + startLine.lowerBound)..<(base + startLine.upperBound)])
        return HTTPHead(startLine: line, headers: headers)
    }

    /// `field-line = field-name ":" OWS field-value OWS` (RFC 9112 5).
    private static func fieldLine(_ line: ArraySlice<UInt8>) throws(HTTPError) -> (name: String, value: String) {
        // RFC 9112 5.2: "A server that receives an obs-fold in a request message that is not
        // within a "message/http" container MUST either reject the message by sending a 400
        // (Bad Request) [...]"; "A user agent that receives an obs-fold in a response message
        // [...] MUST replace each received obs-fold with one or more SP octets". We refuse it
        // on both sides: no peer of ours folds.
        if line.first == HTTPSyntax.space || line.first == HTTPSyntax.tab {
            throw .badRequest("obsolete line folding is not accepted")
        }
        guard let colon = line.firstIndex(of: HTTPSyntax.colon) else {
            throw .badRequest("header line without a colon")
        }
        // RFC 9112 5.1: "No whitespace is allowed between the field name and colon."
        let name = line[line.startIndex..<colon]
        guard HTTPSyntax.isToken(name) else {
            throw .badRequest("invalid header field name")
        }
        var value = line[(colon + 1)...]
        while let first = value.first, first == HTTPSyntax.space || first == HTTPSyntax.tab {
            value = value.dropFirst()
        }
        while let last = value.last, last == HTTPSyntax.space || last == HTTPSyntax.tab {
            value = value.dropLast()
        }
        // RFC 9110 5.5: "Field values containing CR, LF, or NUL characters are invalid and
        // dangerous [...] a recipient of CR, LF, or NUL within a field value MUST either reject
        // the message or replace each of those characters with SP"; the other controls are
        // outside `field-vchar` too, and refused likewise.
        guard value.allSatisfy(HTTPSyntax.isFieldValueCharacter) else {
            throw .badRequest("control character in a header field value")
        }
        return (String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self))
    }
}
