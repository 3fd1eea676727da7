/// Which end of a WebSocket connection this endpoint is.
///
/// The role decides the masking direction (RFC 6455 5.1): "a client MUST mask all frames that
/// it sends to the server" and "A server MUST NOT mask any frames that it sends to the client".
public enum WebSocketRole: Sendable, Equatable {
    /// The endpoint that accepted the TCP connection and answered the opening handshake.
    case server
    /// The endpoint that opened the TCP connection and sent the opening handshake.
    case client
}

/// Limits applied to everything a peer sends, checked before any memory is reserved for it.
public struct WebSocketConfiguration: Sendable, Equatable {
    /// The largest message (sum of its fragments' payloads) accepted; larger ones fail the
    /// connection with close code 1009.
    public var maxMessageSize: Int
    /// The largest single frame payload accepted; larger ones fail the connection with 1009.
    public var maxFrameSize: Int
    /// The most frames one message may be split into; more fail the connection with 1009.
    public var maxFragments: Int
    /// The largest opening-handshake header block accepted, request line and terminating blank
    /// line included; a server answers a larger one with `431`.
    public var maxHandshakeHeaderBytes: Int

    /// Creates a configuration; every limit must be positive.
    ///
    /// - Parameters:
    ///   - maxMessageSize: largest message in bytes (default 1 MiB).
    ///   - maxFrameSize: largest frame payload in bytes (defaults to `maxMessageSize`).
    ///   - maxFragments: most frames per message (default 1024).
    ///   - maxHandshakeHeaderBytes: largest handshake header block (default 8 KiB).
    public init(
        maxMessageSize: Int = 1 << 20,
        maxFrameSize: Int? = nil,
        maxFragments: Int = 1024,
        maxHandshakeHeaderBytes: Int = 8192
    ) {
        precondition(maxMessageSize > 0, "maxMessageSize must be positive")
        precondition(maxFragments > 0, "maxFragments must be positive")
        precondition(maxHandshakeHeaderBytes > 0, "maxHandshakeHeaderBytes must be positive")
        self.maxMessageSize = maxMessageSize
        self.maxFrameSize = maxFrameSize ?? maxMessageSize
        precondition(self.maxFrameSize > 0, "maxFrameSize must be positive")
        self.maxFragments = maxFragments
        self.maxHandshakeHeaderBytes = maxHandshakeHeaderBytes
    }
}
