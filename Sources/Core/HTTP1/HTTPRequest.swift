/// An HTTP/1.x request: what the parser produces, and what a client serializes.
public struct HTTPRequest: Sendable {
    /// The method token, e.g. `GET`, case-sensitive as RFC 9110 9.1 says.
    public var method: String
    /// The request target as sent, e.g. `/orders?page=2`.
    public var target: String
    /// The percent-decoded path of ``target``.
    public var path: String
    /// The percent-decoded query parameters of ``target``, in order.
    public var query: [(String, String)]
    /// The path's segments, each percent-decoded on its own (see `RequestTarget.segments`): a
    /// segment may hold a `/` sent as `%2F`.
    public var pathSegments: [String]
    /// The protocol version.
    public var version: HTTPVersion
    /// The header fields.
    public var headers: HTTPHeaders
    /// The body (empty when there is none).
    public var body: [UInt8]
    /// Whether the connection stays open after the response (RFC 9112 9.3).
    public var keepAlive: Bool

    /// A request to send, e.g. from a command-line client. `target` must be origin-form.
    public init(
        method: String, target: String, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = [],
        keepAlive: Bool = true
    ) throws {
        let parsed = try RequestTarget(parsing: target)
        self.init(
            method: method, target: target, parsed: parsed, version: .http1_1, headers: headers, body: body, keepAlive: keepAlive)
    }

    init(
        method: String, target: String, parsed: RequestTarget, version: HTTPVersion, headers: HTTPHeaders, body: [UInt8],
        keepAlive: Bool
    ) {
        self.method = method
        self.target = target
        self.path = parsed.path
        self.query = parsed.query
        self.pathSegments = parsed.segments
        self.version = version
        self.headers = headers
        self.body = body
        self.keepAlive = keepAlive
    }

    /// The first value of query parameter `name`.
    public func queryValue(_ name: String) -> String? {
        query.first { $0.0 == name }?.1
    }

    /// The wire form: request line, `Host` (default `localhost`), the headers, `Connection:
    /// close` when not ``keepAlive``, `Content-Length` when there is a body or the method
    /// usually carries one, then the body.
    public func serialize() -> [UInt8] {
        var text = "\(method) \(target) \(version)\r\n"
        if headers["Host"] == nil {
            text += "Host: localhost\r\n"
        }
        for field in headers
        where !HTTPHeaders.equalNames(field.name, "Content-Length")
            && !HTTPHeaders.equalNames(field.name, "Connection")
        {
            text += "\(field.name): \(field.value)\r\n"
        }
        if !keepAlive {
            text += "Connection: close\r\n"
        }
        if !body.isEmpty || ["POST", "PUT", "PATCH"].contains(method) {
            text += "Content-Length: \(body.count)\r\n"
        }
        text += "\r\n"
        return Array(text.utf8) + body
    }
}
