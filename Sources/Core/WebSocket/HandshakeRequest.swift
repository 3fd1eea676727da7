/// A client's opening handshake that passed every check of RFC 6455 4.2.1.
public struct HandshakeRequest: Sendable {
    /// The request target, e.g. `/` or `/orders?store=1`.
    public var path: String
    /// The `Host` header field value.
    public var host: String
    /// The `Sec-WebSocket-Key` value, already checked to be base64 of 16 bytes.
    public var key: String
    /// Every header field in arrival order.
    public var headers: [(String, String)]
    /// The subprotocols the client offered in `Sec-WebSocket-Protocol`, in its order of
    /// preference.
    public var requestedSubprotocols: [String]
    /// The extensions the client offered in `Sec-WebSocket-Extensions`; none is ever accepted.
    public var requestedExtensions: [String]
    /// The `Origin` header field, sent by browsers.
    public var origin: String?

    /// Creates a request; normally made by `ServerHandshakeParser`.
    public init(
        path: String, host: String, key: String, headers: [(String, String)] = [],
        requestedSubprotocols: [String] = [], requestedExtensions: [String] = [],
        origin: String? = nil
    ) {
        self.path = path
        self.host = host
        self.key = key
        self.headers = headers
        self.requestedSubprotocols = requestedSubprotocols
        self.requestedExtensions = requestedExtensions
        self.origin = origin
    }

    /// Every value of the header fields named `name`, compared case-insensitively.
    public func headerValues(named name: String) -> [String] {
        let wanted = name.lowercased()
        return headers.compactMap { $0.0.lowercased() == wanted ? $0.1 : nil }
    }

    /// The first subprotocol the client offered that is also in `supported`, or `nil`.
    ///
    /// RFC 6455 4.2.2: the server selects "one or none of the acceptable protocols"; the client
    /// lists them "ordered by preference".
    public func selectSubprotocol(from supported: [String]) -> String? {
        requestedSubprotocols.first { supported.contains($0) }
    }
}
