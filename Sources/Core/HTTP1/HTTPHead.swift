/// The head of an HTTP/1.x message: its start line and header fields (RFC 9112 2.1).
public struct HTTPHead: Sendable, Equatable {
    /// The request line or status line, without its line terminator.
    public var startLine: [UInt8]
    /// The header fields in arrival order.
    public var headers: HTTPHeaders

    /// Creates a head.
    public init(startLine: [UInt8], headers: HTTPHeaders) {
        self.startLine = startLine
        self.headers = headers
    }

    /// The start line as text (for messages and logs).
    public var startLineText: String {
        String(decoding: startLine, as: UTF8.self)
    }
}
