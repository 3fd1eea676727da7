import HTTP1

/// The outcome of feeding bytes to `ClientHandshake.parseResponse`.
public enum ClientHandshakeResult: Equatable, Sendable {
    /// The response head is not complete yet: read more and call again with everything
    /// received so far.
    case incomplete
    /// The server accepted. The response occupies the first `consumed` bytes; anything after it
    /// is frames and belongs to the connection's frame parser.
    case accepted(subprotocol: String?, consumed: Int)
    /// The server refused or answered wrongly; the client must close the TCP connection.
    case failed(WebSocketError)
}

/// The client side of the opening handshake (RFC 6455 4.1): the request to send and the checks
/// on the server's response.
public struct ClientHandshake: Sendable {
    /// The `Host` value, including `:port` when it is not the default.
    public let host: String
    /// The request target, e.g. `/`.
    public let path: String
    /// The `Sec-WebSocket-Key` sent.
    public let key: String
    /// The subprotocols offered, in order of preference.
    public let subprotocols: [String]
    private var head: HTTPHeadParser

    /// Prepares a handshake.
    ///
    /// - Parameters:
    ///   - host: the server's authority, e.g. `192.168.1.5:8080`.
    ///   - path: the request target; must start with `/`.
    ///   - key: base64 of 16 random bytes, fresh for every connection (`makeKey()`).
    ///   - subprotocols: tokens to offer in `Sec-WebSocket-Protocol`, possibly none.
    ///   - configuration: `maxHandshakeHeaderBytes` bounds the response head.
    public init(
        host: String, path: String = "/", key: String, subprotocols: [String] = [],
        configuration: WebSocketConfiguration = WebSocketConfiguration()
    ) {
        precondition(path.hasPrefix("/"), "the request target must start with /")
        precondition(subprotocols.allSatisfy { HTTPSyntax.isToken($0) }, "subprotocols must be tokens")
        self.host = host
        self.path = path
        self.key = key
        self.subprotocols = subprotocols
        self.head = HTTPHeadParser(strictness: .strict, maxHeadBytes: configuration.maxHandshakeHeaderBytes)
    }

    /// A fresh key: RFC 6455 4.1, "a randomly selected 16-byte value that has been
    /// base64-encoded".
    public static func makeKey<Generator: RandomNumberGenerator>(using generator: inout Generator) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16)
        for _ in 0..<16 {
            bytes.append(UInt8.random(in: .min ... .max, using: &generator))
        }
        return Base64.encode(bytes)
    }

    /// A fresh key from the system's random number generator.
    public static func makeKey() -> String {
        var generator = SystemRandomNumberGenerator()
        return makeKey(using: &generator)
    }

    /// The request to write on the freshly connected socket.
    public var requestBytes: [UInt8] {
        var text = "GET \(path) HTTP/1.1\r\n"
        text += "Host: \(host)\r\n"
        text += "Upgrade: websocket\r\n"
        text += "Connection: Upgrade\r\n"
        text += "Sec-WebSocket-Key: \(key)\r\n"
        text += "Sec-WebSocket-Version: 13\r\n"
        if !subprotocols.isEmpty {
            text += "Sec-WebSocket-Protocol: \(subprotocols.joined(separator: ", "))\r\n"
        }
        text += "\r\n"
        return Array(text.utf8)
    }

    /// Checks the server's response; pass every byte received so far.
    ///
    /// The head is read with ``HTTPHeadStrictness/strict``: lines end in CRLF, a bare LF or CR
    /// fails the handshake.
    public mutating func parseResponse(_ buffer: [UInt8]) -> ClientHandshakeResult {
        let progress: HTTPHeadParser.Result
        do {
            progress = try head.parse(buffer)
        } catch {
            if error.status == 431 {
                return .failed(WebSocketError(.handshakeTooLarge, "response \(error.message)"))
            }
            return .failed(WebSocketError(.handshakeFailed, "malformed response: \(error.message)"))
        }
        switch progress {
        case .needMoreData:
            return .incomplete
        case .complete(let parsed, let consumed):
            switch validate(parsed) {
            case .success(let subprotocol):
                return .accepted(subprotocol: subprotocol, consumed: consumed)
            case .failure(let error):
                return .failed(error)
            }
        }
    }

    private func validate(_ parsed: HTTPHead) -> Result<String?, WebSocketError> {
        func fail(_ message: String) -> Result<String?, WebSocketError> {
            .failure(WebSocketError(.handshakeFailed, message))
        }
        // RFC 6455 4.1: "If the status code received from the server is not 101, the client
        // handles the response per HTTP [RFC2616] procedures." We have no other use for it.
        let headers = parsed.headers
        guard let line = try? HTTPStatusLine(parsing: parsed.startLine), line.version == .http1_1 else {
            return fail("malformed status line: \(parsed.startLineText)")
        }
        guard line.status == 101 else {
            return fail("server answered \(line.status)\(line.reason.isEmpty ? "" : " \(line.reason)") instead of 101")
        }
        // "If the response lacks an |Upgrade| header field or the |Upgrade| header field
        // contains a value that is not an ASCII case-insensitive match for the value
        // "websocket", the client MUST _Fail the WebSocket Connection_."
        let upgrades = headers.values("Upgrade")
        guard upgrades.count == 1, upgrades[0].lowercased() == "websocket" else {
            return fail("response lacks Upgrade: websocket")
        }
        // "If the response lacks a |Connection| header field or the |Connection| header field
        // doesn't contain a token that is an ASCII case-insensitive match for the value
        // "Upgrade", the client MUST _Fail the WebSocket Connection_."
        guard headers.listContains("Connection", token: "Upgrade") else {
            return fail("response lacks Connection: Upgrade")
        }
        // "If the response lacks a |Sec-WebSocket-Accept| header field or the
        // |Sec-WebSocket-Accept| contains a value other than the base64-encoded SHA-1 of the
        // concatenation of the |Sec-WebSocket-Key| (as a string, not base64-decoded) with the
        // string "258EAFA5-E914-47DA-95CA-C5AB0DC85B11" [...] the client MUST _Fail the
        // WebSocket Connection_."
        let accepts = headers.values("Sec-WebSocket-Accept")
        let expected = WebSocketAccept.value(forKey: key)
        guard accepts.count == 1, accepts[0] == expected else {
            return fail("Sec-WebSocket-Accept is \(accepts.first.map { "'\($0)'" } ?? "missing"), expected '\(expected)'")
        }
        // "If the response includes a |Sec-WebSocket-Extensions| header field and this header
        // field indicates the use of an extension that was not present in the client's
        // handshake [...] the client MUST _Fail the WebSocket Connection_." We offer none.
        let extensions = headers.listElements("Sec-WebSocket-Extensions")
        guard extensions.isEmpty else {
            return fail("server selected extensions that were not offered: \(extensions.joined(separator: ", "))")
        }
        // "If the response includes a |Sec-WebSocket-Protocol| header field and this header
        // field indicates the use of a subprotocol that was not present in the client's
        // handshake [...] the client MUST _Fail the WebSocket Connection_."
        let selected = headers.listElements("Sec-WebSocket-Protocol")
        guard selected.count <= 1 else {
            return fail("server selected more than one subprotocol")
        }
        if let subprotocol = selected.first, !subprotocols.contains(subprotocol) {
            return fail("server selected subprotocol '\(subprotocol)' that was not offered")
        }
        return .success(selected.first)
    }
}
