import HTTP1

/// The outcome of feeding bytes to a `ServerHandshakeParser`.
public enum ServerHandshakeResult: Sendable {
    /// The header block is not complete yet: read more and call `parse` again with everything
    /// received so far.
    case incomplete
    /// A valid opening handshake. The request occupies the first `consumed` bytes; anything
    /// after it is frames the client pipelined behind the request and belongs to the
    /// connection's frame parser.
    case accepted(HandshakeRequest, consumed: Int)
    /// An invalid request: write `rejection.bytes`, then close the TCP connection. Nothing else
    /// may be sent before it (no `101`).
    case rejected(HTTPRejection)
}

/// Reads a client's opening handshake (RFC 6455 4.2.1) from a growing byte buffer.
///
/// Pass the whole buffer received so far on every call; the parser remembers how far it has
/// scanned, so chunking does not change the result or make parsing quadratic. The first line is
/// checked as soon as it is complete, so a request that is not a WebSocket upgrade is refused
/// without waiting for the rest of its head.
public struct ServerHandshakeParser: Sendable {
    /// Whether the request line has been checked on its own yet.
    private enum RequestLineCheck: Sendable {
        case pending
        case passed
    }

    private var head: HTTPHeadParser
    private var requestLineCheck = RequestLineCheck.pending

    /// Creates a parser enforcing `configuration.maxHandshakeHeaderBytes`.
    ///
    /// The head is read with ``HTTPHeadStrictness/strict``: lines end in CRLF, a bare LF or CR
    /// and an empty line before the request line are refused with 400.
    public init(configuration: WebSocketConfiguration = WebSocketConfiguration()) {
        self.head = HTTPHeadParser(strictness: .strict, maxHeadBytes: configuration.maxHandshakeHeaderBytes)
    }

    /// Parses `buffer`, which holds every byte received on the connection so far.
    public mutating func parse(_ buffer: [UInt8]) -> ServerHandshakeResult {
        let progress: HTTPHeadParser.Result
        do {
            progress = try head.parse(buffer)
        } catch {
            return .rejected(HTTPRejection(error))
        }
        switch progress {
        case .needMoreData:
            if case .pending = requestLineCheck, let line = head.startLine(in: buffer[...]) {
                requestLineCheck = .passed
                if case .failure(let rejection) = Self.checkRequestLine(line) {
                    return .rejected(rejection)
                }
            }
            return .incomplete
        case .complete(let parsed, let consumed):
            switch Self.validate(parsed) {
            case .success(let request):
                return .accepted(request, consumed: consumed)
            case .failure(let rejection):
                return .rejected(rejection)
            }
        }
    }

    /// Checks `Request-Line = Method SP Request-URI SP HTTP-Version` and returns the path.
    static func checkRequestLine(_ bytes: some Collection<UInt8>) -> Result<String, HTTPRejection> {
        let line: HTTPRequestLine
        do {
            line = try HTTPRequestLine(parsing: bytes)
        } catch {
            return .failure(HTTPRejection(error))
        }
        guard line.version == .http1_1 else {
            return .failure(HTTPRejection(status: 505, body: "only HTTP/1.1 is supported"))
        }
        // RFC 6455 4.2.1: "An HTTP/1.1 or higher GET request, including a "Request-URI"".
        guard line.method == "GET" else {
            return .failure(
                HTTPRejection(
                    status: 405, headers: [.init("Allow", "GET")],
                    body: "method \(line.method) not allowed; a WebSocket handshake is a GET"))
        }
        // The client sends "/resource name/" (RFC 6455 4.1), i.e. an origin-form target.
        guard line.target.hasPrefix("/") else {
            return .failure(HTTPRejection(status: 400, body: "request target must start with /"))
        }
        return .success(line.target)
    }

    /// Applies RFC 6455 4.2.1 to a parsed head.
    static func validate(_ parsed: HTTPHead) -> Result<HandshakeRequest, HTTPRejection> {
        let path: String
        let headers = parsed.headers
        switch checkRequestLine(parsed.startLine) {
        case .success(let value): path = value
        case .failure(let rejection): return .failure(rejection)
        }
        func reject(_ status: Int, _ body: String, _ headers: [HTTPRejection.HTTPField] = []) -> Result<HandshakeRequest, HTTPRejection> {
            .failure(HTTPRejection(status: status, headers: headers, body: body))
        }
        // "A |Host| header field containing the server's authority." RFC 7230 5.4: "A server
        // MUST respond with a 400 (Bad Request) status code to any HTTP/1.1 request message
        // that lacks a Host header field and to any request message that contains more than one
        // Host header field".
        let hosts = headers.values("Host")
        guard hosts.count == 1, let host = hosts.first, !host.isEmpty else {
            return reject(400, "exactly one non-empty Host header is required")
        }
        // "An |Upgrade| header field containing the value "websocket", treated as an ASCII
        // case-insensitive value."
        guard headers.listContains("Upgrade", token: "websocket") else {
            return reject(
                426, "Upgrade: websocket is required",
                [.init("Upgrade", "websocket"), .init("Sec-WebSocket-Version", "13")])
        }
        // "A |Connection| header field that includes the token "Upgrade", treated as an ASCII
        // case-insensitive value."
        guard headers.listContains("Connection", token: "Upgrade") else {
            return reject(400, "Connection header must include the Upgrade token")
        }
        // "A |Sec-WebSocket-Version| header field, with a value of 13." 4.2.2: otherwise "send an
        // appropriate HTTP error code (such as 426 Upgrade Required) and a
        // |Sec-WebSocket-Version| header field indicating the version(s) the server is capable
        // of understanding."
        let versions = headers.values("Sec-WebSocket-Version")
        guard versions == ["13"] else {
            return reject(
                426, "Sec-WebSocket-Version: 13 is required",
                [.init("Upgrade", "websocket"), .init("Sec-WebSocket-Version", "13")])
        }
        // "A |Sec-WebSocket-Key| header field with a base64-encoded (see Section 4 of [RFC4648])
        // value that, when decoded, is 16 bytes in length." 11.3.1: it "MUST NOT appear more
        // than once in an HTTP request."
        let keys = headers.values("Sec-WebSocket-Key")
        guard keys.count == 1, let key = keys.first, Base64.decode(key)?.count == 16 else {
            return reject(400, "Sec-WebSocket-Key must appear once and be base64 of 16 bytes")
        }
        // A handshake has no body; bytes after the head are frames, never a request body.
        let lengths = headers.values("Content-Length")
        guard headers.values("Transfer-Encoding").isEmpty, lengths.allSatisfy({ $0 == "0" }) else {
            return reject(400, "a WebSocket handshake request must not have a body")
        }
        // 4.1: subprotocol elements "MUST be non-empty strings with characters in the range
        // U+0021 to U+007E not including separator characters [...] and MUST all be unique".
        let subprotocols = headers.listElements("Sec-WebSocket-Protocol")
        guard subprotocols.allSatisfy({ HTTPSyntax.isToken($0) }),
            Set(subprotocols).count == subprotocols.count
        else {
            return reject(400, "Sec-WebSocket-Protocol must list unique tokens")
        }
        return .success(
            HandshakeRequest(
                path: path,
                host: host,
                key: key,
                headers: headers.fields.map { ($0.name, $0.value) },
                requestedSubprotocols: subprotocols,
                requestedExtensions: headers.listElements("Sec-WebSocket-Extensions"),
                origin: headers.values("Origin").first))
    }
}
