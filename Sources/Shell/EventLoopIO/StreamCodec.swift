/// A layer between a ``StreamChannel``'s socket and its owner, such as TLS: the bytes read are
/// decoded before ``StreamChannel/onRead`` sees them, and the bytes written are encoded before
/// they reach the socket. A codec is driven on the channel's loop only.
public protocol StreamCodec: AnyObject {
    /// Bytes read from the socket: what they carried for the owner, what must be sent back at
    /// once (a handshake's next flight), and whether the stream is broken (the reply, an alert,
    /// is sent and the channel closes).
    func decode(_ bytes: [UInt8]) -> StreamCodecOutput
    /// The bytes to send for `bytes` of the owner (empty while they must wait, e.g. for a
    /// handshake to finish); throws when the stream is broken.
    func encode(_ bytes: [UInt8]) throws -> [UInt8]
    /// The bytes that end the stream cleanly (TLS's close_notify), sent before the channel shuts
    /// down its side.
    func closing() -> [UInt8]
}

/// What a ``StreamCodec`` made of bytes read from the socket.
public struct StreamCodecOutput: Equatable, Sendable {
    /// The owner's bytes.
    public var received: [UInt8]
    /// To send at once, before anything the owner writes next.
    public var reply: [UInt8]
    /// Why the stream cannot go on (the channel sends `reply`, then closes); nil while it can.
    public var failure: String?

    /// An output from its parts.
    public init(received: [UInt8] = [], reply: [UInt8] = [], failure: String? = nil) {
        self.received = received
        self.reply = reply
        self.failure = failure
    }
}
