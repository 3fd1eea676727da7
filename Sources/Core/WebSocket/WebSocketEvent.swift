/// Something a `WebSocketConnection` reports after receiving bytes, in the order it happened.
public enum WebSocketEvent: Equatable, Sendable {
    /// A complete text message, validated as UTF-8.
    case text(String)
    /// A complete binary message.
    case binary([UInt8])
    /// The peer pinged; the matching pong is already in the `.send` event just before this one.
    case ping([UInt8])
    /// The peer answered a ping (or sent an unsolicited pong).
    case pong([UInt8])
    /// Bytes the caller must write to the socket now, in order with other `.send` events:
    /// automatic pongs, the Close frame answering the peer's, the Close frame failing the
    /// connection.
    case send([UInt8])
    /// The closing handshake finished (the peer answered our Close) or the peer closed and we
    /// answered (the answer is in the preceding `.send`). `code` is the peer's status code,
    /// `nil` when its Close frame had none. The server now closes the TCP connection; the
    /// client waits briefly for the server to do so, then closes it itself.
    case closed(code: CloseCode?, reason: String)
    /// The peer violated the protocol or a limit. When the connection was still open, a
    /// `.send` with our Close frame (1002, 1007 or 1009, see `WebSocketError.closeCode`)
    /// precedes this event; write it, then close the TCP connection.
    case failed(WebSocketError)
}
