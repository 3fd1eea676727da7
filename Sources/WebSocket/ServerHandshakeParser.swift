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
    private let configuration: WebSocketConfiguration
    private var scanned = 0
    private var firstLineScanned = 0
    private var firstLineChecked = false

    /// Creates a parser enforcing `configuration.maxHandshakeHeaderBytes`.
    public init(configuration: WebSocketConfiguration = WebSocketConfiguration()) {
        self.configuration = configuration
    }

    /// Parses `buffer`, which holds every byte received on the connection so far.
    public mutating func parse(_ buffer: [UInt8]) -> ServerHandshakeResult {
        let limit = configuration.maxHandshakeHeaderBytes
        guard let end = HTTPHead.endOfHead(in: buffer, scanningFrom: scanned) else {
            scanned = buffer.count
            if let rejection = checkFirstLineEarly(buffer) {
                return .rejected(rejection)
            }
            if buffer.count >= limit {
                return .rejected(Self.tooLarge(limit))
            }
            return .incomplete
        }
        scanned = end
        guard end <= limit else {
            return .rejected(Self.tooLarge(limit))
        }
        let head: HTTPHead
        do {
            head = try HTTPHead.parse(buffer[0..<end])
        } catch let error as HTTPHead.SyntaxError {
            return .rejected(HTTPRejection(status: 400, body: error.message))
        } catch {
            preconditionFailure("HTTPHead.parse throws only SyntaxError")
        }
        switch Self.validate(head) {
        case .success(let request):
            return .accepted(request, consumed: end)
        case .failure(let rejection):
            return .rejected(rejection)
        }
    }

    private mutating func checkFirstLineEarly(_ buffer: [UInt8]) -> HTTPRejection? {
        guard !firstLineChecked else { return nil }
        var index = max(0, firstLineScanned - 1)
        while index + 1 < buffer.count {
            if buffer[index] == UInt8(ascii: "\r") && buffer[index + 1] == UInt8(ascii: "\n") {
                firstLineChecked = true
                let line = buffer[0..<index]
                guard line.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else {
                    return HTTPRejection(status: 400, body: "request line has control or non-ASCII bytes")
                }
                if case .failure(let rejection) = Self.checkRequestLine(String(decoding: line, as: UTF8.self)) {
                    return rejection
                }
                return nil
            }
            index += 1
        }
        firstLineScanned = buffer.count
        return nil
    }

    private static func tooLarge(_ limit: Int) -> HTTPRejection {
        HTTPRejection(status: 431, body: "handshake header block exceeds \(limit) bytes")
    }

    /// Checks `Request-Line = Method SP Request-URI SP HTTP-Version` and returns the path.
    static func checkRequestLine(_ line: String) -> Result<String, HTTPRejection> {
        let parts = line.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 3, HTTPHead.isToken(String(parts[0])), !parts[1].isEmpty else {
            return .failure(HTTPRejection(status: 400, body: "malformed request line"))
        }
        let version = Array(parts[2].utf8)
        let isDigit = { (byte: UInt8) in byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
        // HTTP-version = HTTP-name "/" DIGIT "." DIGIT (RFC 7230 2.6)
        guard version.count == 8, version.starts(with: Array("HTTP/".utf8)), isDigit(version[5]),
              version[6] == UInt8(ascii: "."), isDigit(version[7])
        else {
            return .failure(HTTPRejection(status: 400, body: "malformed HTTP version"))
        }
        guard parts[2] == "HTTP/1.1" else {
            return .failure(HTTPRejection(status: 505, body: "only HTTP/1.1 is supported"))
        }
        // RFC 6455 4.2.1: "An HTTP/1.1 or higher GET request, including a "Request-URI"".
        guard parts[0] == "GET" else {
            return .failure(HTTPRejection(
                status: 405, headers: [.init("Allow", "GET")],
                body: "method \(parts[0]) not allowed; a WebSocket handshake is a GET"))
        }
        // The client sends "/resource name/" (RFC 6455 4.1), i.e. an origin-form target.
        guard parts[1].hasPrefix("/") else {
            return .failure(HTTPRejection(status: 400, body: "request target must start with /"))
        }
        return .success(String(parts[1]))
    }

    /// Applies RFC 6455 4.2.1 to a parsed head.
    static func validate(_ head: HTTPHead) -> Result<HandshakeRequest, HTTPRejection> {
        let path: String
        switch checkRequestLine(head.startLine) {
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
        let hosts = head.values("Host")
        guard hosts.count == 1, let host = hosts.first, !host.isEmpty else {
            return reject(400, "exactly one non-empty Host header is required")
        }
        // "An |Upgrade| header field containing the value "websocket", treated as an ASCII
        // case-insensitive value."
        guard head.listContains("Upgrade", token: "websocket") else {
            return reject(426, "Upgrade: websocket is required",
                          [.init("Upgrade", "websocket"), .init("Sec-WebSocket-Version", "13")])
        }
        // "A |Connection| header field that includes the token "Upgrade", treated as an ASCII
        // case-insensitive value."
        guard head.listContains("Connection", token: "Upgrade") else {
            return reject(400, "Connection header must include the Upgrade token")
        }
        // "A |Sec-WebSocket-Version| header field, with a value of 13." 4.2.2: otherwise "send an
        // appropriate HTTP error code (such as 426 Upgrade Required) and a
        // |Sec-WebSocket-Version| header field indicating the version(s) the server is capable
        // of understanding."
        let versions = head.values("Sec-WebSocket-Version")
        guard versions == ["13"] else {
            return reject(426, "Sec-WebSocket-Version: 13 is required",
                          [.init("Upgrade", "websocket"), .init("Sec-WebSocket-Version", "13")])
        }
        // "A |Sec-WebSocket-Key| header field with a base64-encoded (see Section 4 of [RFC4648])
        // value that, when decoded, is 16 bytes in length." 11.3.1: it "MUST NOT appear more
        // than once in an HTTP request."
        let keys = head.values("Sec-WebSocket-Key")
        guard keys.count == 1, let key = keys.first, Base64.decode(key)?.count == 16 else {
            return reject(400, "Sec-WebSocket-Key must appear once and be base64 of 16 bytes")
        }
        // A handshake has no body; bytes after the head are frames, never a request body.
        let lengths = head.values("Content-Length")
        guard head.values("Transfer-Encoding").isEmpty, lengths.allSatisfy({ $0 == "0" }) else {
            return reject(400, "a WebSocket handshake request must not have a body")
        }
        // 4.1: subprotocol elements "MUST be non-empty strings with characters in the range
        // U+0021 to U+007E not including separator characters [...] and MUST all be unique".
        let subprotocols = head.listElements("Sec-WebSocket-Protocol")
        guard subprotocols.allSatisfy(HTTPHead.isToken),
              Set(subprotocols).count == subprotocols.count
        else {
            return reject(400, "Sec-WebSocket-Protocol must list unique tokens")
        }
        return .success(HandshakeRequest(
            path: path,
            host: host,
            key: key,
            headers: head.fields.map { ($0.name, $0.value) },
            requestedSubprotocols: subprotocols,
            requestedExtensions: head.listElements("Sec-WebSocket-Extensions"),
            origin: head.values("Origin").first))
    }
}
