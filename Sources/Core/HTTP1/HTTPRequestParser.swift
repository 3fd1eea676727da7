/// An incremental HTTP/1.1 request parser (sans I/O).
///
/// Two ways to use it:
/// - ``append(_:)`` received bytes, then call ``nextRequest()`` until it returns `nil`
///   (pipelined requests come out one by one);
/// - or keep your own buffer and call ``parse(_:)`` with it: it returns a request and how many
///   bytes it took (drop them and call again), or ``Result/needMoreData``. Between calls only
///   append to that buffer or drop exactly the consumed bytes.
///
/// Bodies are framed by `Content-Length`; a request with `Transfer-Encoding` is answered 501.
/// The head is read by ``HTTPHeadParser`` with ``strictness``. After an error the parser keeps
/// throwing it: reply with its status and close.
public struct HTTPRequestParser {
    /// Size limits.
    public struct Limits: Sendable {
        /// The largest request line plus header block, in bytes (431 beyond it).
        public var maxHeaderBytes: Int
        /// The largest body, in bytes (413 beyond it).
        public var maxBodyBytes: Int

        /// 16 KiB of headers and 1 MiB of body by default.
        public init(maxHeaderBytes: Int = 16 << 10, maxBodyBytes: Int = 1 << 20) {
            self.maxHeaderBytes = maxHeaderBytes
            self.maxBodyBytes = maxBodyBytes
        }
    }

    /// What ``parse(_:)`` found.
    public enum Result {
        /// The buffer holds no complete request yet.
        case needMoreData
        /// A complete request, which used the first `consumed` bytes of the buffer.
        case request(HTTPRequest, consumed: Int)
    }

    private enum State {
        /// Reading the head.
        case head(HTTPHeadParser)
        /// The head is parsed; waiting for the body.
        case body(HTTPRequest, headLength: Int, bodyLength: Int)
        case failed(HTTPError)
    }

    /// The limits in force.
    public let limits: Limits
    /// The line rules in force.
    public let strictness: HTTPHeadStrictness
    private var state: State
    private var buffer: [UInt8] = []
    private var bufferStart = 0

    /// A parser with the given limits; lenient by default (bare LF accepted, empty lines
    /// before the request line skipped).
    public init(limits: Limits = Limits(), strictness: HTTPHeadStrictness = .lenient) {
        self.limits = limits
        self.strictness = strictness
        self.state = .head(HTTPHeadParser(strictness: strictness, maxHeadBytes: limits.maxHeaderBytes))
    }

    /// Bytes appended but not yet returned as part of a request.
    public var bufferedByteCount: Int { buffer.count - bufferStart }

    /// Adds received bytes for ``nextRequest()``.
    public mutating func append(_ bytes: [UInt8]) {
        buffer.append(contentsOf: bytes)
    }

    /// The next complete request from the appended bytes, or `nil` when more bytes are needed.
    public mutating func nextRequest() throws -> HTTPRequest? {
        switch try parse(buffer[bufferStart...]) {
        case .needMoreData:
            return nil
        case .request(let request, let consumed):
            bufferStart += consumed
            if bufferStart == buffer.count {
                buffer.removeAll(keepingCapacity: buffer.count <= 64 << 10)
                bufferStart = 0
            } else if bufferStart > 4096 && bufferStart * 2 > buffer.count {
                buffer.removeFirst(bufferStart)
                bufferStart = 0
            }
            return request
        }
    }

    /// Parses the request at the start of `bytes`. See the type's documentation for the rules.
    public mutating func parse(_ bytes: [UInt8]) throws -> Result {
        try parse(bytes[...])
    }

    /// Parses the request at the start of `bytes`. See the type's documentation for the rules.
    public mutating func parse(_ bytes: ArraySlice<UInt8>) throws -> Result {
        do {
            return try step(bytes)
        } catch {
            state = .failed(error)
            throw error
        }
    }

    private mutating func step(_ bytes: ArraySlice<UInt8>) throws(HTTPError) -> Result {
        switch state {
        case .failed(let error):
            throw error
        case .body(let request, let headLength, let bodyLength):
            return complete(request, bytes, headLength: headLength, bodyLength: bodyLength)
        case .head(var headParser):
            let progress = try headParser.parse(bytes)
            state = .head(headParser)
            guard case .complete(let head, let headLength) = progress else {
                return .needMoreData
            }
            let request = try HTTPRequestParser.request(head)
            let bodyLength = try bodyLength(of: request)
            return complete(request, bytes, headLength: headLength, bodyLength: bodyLength)
        }
    }

    private mutating func complete(
        _ request: HTTPRequest, _ bytes: ArraySlice<UInt8>,
        headLength: Int, bodyLength: Int
    ) -> Result {
        guard bytes.count >= headLength + bodyLength else {
            state = .body(request, headLength: headLength, bodyLength: bodyLength)
            return .needMoreData
        }
        var request = request
        let bodyStart = bytes.startIndex + headLength
        request.body = Array(bytes[bodyStart..<(bodyStart + bodyLength)])
        state = .head(HTTPHeadParser(strictness: strictness, maxHeadBytes: limits.maxHeaderBytes))
        return .request(request, consumed: headLength + bodyLength)
    }

    private static func request(_ head: HTTPHead) throws(HTTPError) -> HTTPRequest {
        let line = try HTTPRequestLine(parsing: head.startLine)
        guard line.version.major == 1 else {
            throw .versionNotSupported("only HTTP/1.x is supported")
        }
        // RFC 9112 3.2: "A server MUST respond with a 400 (Bad Request) status code to any
        // HTTP/1.1 request message that lacks a Host header field and to any request message
        // that contains more than one Host header field line"
        let hosts = head.headers.values("Host")
        if hosts.count > 1 || (hosts.isEmpty && line.version.minor >= 1) {
            throw .badRequest(hosts.isEmpty ? "missing Host header" : "more than one Host header")
        }
        let target: RequestTarget
        do {
            target = try RequestTarget(parsing: line.target)
        } catch let error as HTTPError {
            throw error
        } catch {
            preconditionFailure("RequestTarget throws only HTTPError")
        }
        return HTTPRequest(
            method: line.method, target: line.target, parsed: target, version: line.version, headers: head.headers, body: [],
            keepAlive: HTTPRequestParser.keepAlive(line.version, head.headers))
    }

    /// RFC 9112 9.3: "If the received protocol is HTTP/1.1 (or later), the connection will
    /// persist after the current response" unless the "close" connection option is present;
    /// for HTTP/1.0 it persists only with the "keep-alive" connection option.
    static func keepAlive(_ version: HTTPVersion, _ headers: HTTPHeaders) -> Bool {
        let options = headers.tokens("Connection")
        if options.contains("close") {
            return false
        }
        if version.minor >= 1 {
            return true
        }
        return options.contains("keep-alive")
    }

    private func bodyLength(of request: HTTPRequest) throws(HTTPError) -> Int {
        // RFC 9112 6.1: "A server that receives a request message with a transfer coding it
        // does not understand SHOULD respond with 501 (Not Implemented)."
        if !request.headers.values("Transfer-Encoding").isEmpty {
            throw .notImplemented("Transfer-Encoding is not supported; send Content-Length")
        }
        // RFC 9112 6.3: "If this is a request message and none of the above are true, then the
        // message body length is zero (no message body is present)."
        guard let length = try request.headers.contentLength(error: HTTPError.badRequest) else {
            return 0
        }
        if length > limits.maxBodyBytes {
            throw .contentTooLarge("body of \(length) bytes exceeds \(limits.maxBodyBytes)")
        }
        return length
    }
}
