import HTTP1

/// An HTTP error response that refuses an opening handshake.
///
/// The server writes `bytes` and then closes the TCP connection (`Connection: close`).
public struct HTTPRejection: Error, Equatable, Sendable, CustomStringConvertible {
    /// The status code: 400, 405, 426, 431 or 505.
    public var status: Int
    /// The reason phrase matching `status`.
    public var reason: String
    /// Extra header fields, e.g. `Sec-WebSocket-Version: 13` on a 426 or `Allow: GET` on a 405.
    public var headers: [HTTPField]
    /// A one-line plain-text explanation, sent as the body.
    public var body: String

    /// One header field of a rejection.
    public struct HTTPField: Equatable, Sendable {
        /// The field name.
        public var name: String
        /// The field value.
        public var value: String

        /// Creates a field.
        public init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
    }

    /// Creates a rejection; the reason phrase is derived from the status.
    public init(status: Int, headers: [HTTPField] = [], body: String) {
        self.status = status
        self.reason = HTTPResponse.reasonPhrase(for: status)
        self.headers = headers
        self.body = body
    }

    /// The refusal of a head that could not be parsed: its status (400 or 431) and message.
    init(_ error: HTTPError) {
        self.init(status: error.status, body: error.message)
    }

    /// The complete response: status line, headers, `Content-Length`, `Connection: close`, body.
    public var bytes: [UInt8] {
        let payload = Array((body + "\n").utf8)
        var text = "HTTP/1.1 \(status) \(reason)\r\n"
        for field in headers {
            text += "\(field.name): \(field.value)\r\n"
        }
        text += "Content-Type: text/plain; charset=utf-8\r\n"
        text += "Content-Length: \(payload.count)\r\n"
        text += "Connection: close\r\n\r\n"
        return Array(text.utf8) + payload
    }

    /// `status reason: body`.
    public var description: String {
        "\(status) \(reason): \(body)"
    }
}
