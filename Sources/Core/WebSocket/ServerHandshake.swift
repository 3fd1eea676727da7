/// The server's answer to an accepted opening handshake.
public enum ServerHandshake {
    /// The `101 Switching Protocols` response for `request`.
    ///
    /// RFC 6455 4.2.2: the response carries "An |Upgrade| header field with value "websocket"",
    /// "A |Connection| header field with value "Upgrade"", the |Sec-WebSocket-Accept| value,
    /// and optionally "A |Sec-WebSocket-Protocol| header field, with a value /subprotocol/".
    /// No `Sec-WebSocket-Extensions` is ever sent: no extension is implemented, so none is
    /// accepted.
    ///
    /// - Parameter subprotocol: one of `request.requestedSubprotocols`, or `nil` for none.
    ///   Anything else is a programming error: the RFC lets the server select only "one of the
    ///   values from the client's handshake".
    public static func response(for request: HandshakeRequest, subprotocol: String?) -> [UInt8] {
        var text = "HTTP/1.1 101 Switching Protocols\r\n"
        text += "Upgrade: websocket\r\n"
        text += "Connection: Upgrade\r\n"
        text += "Sec-WebSocket-Accept: \(WebSocketAccept.value(forKey: request.key))\r\n"
        if let subprotocol {
            precondition(
                request.requestedSubprotocols.contains(subprotocol),
                "the selected subprotocol must be one the client offered")
            text += "Sec-WebSocket-Protocol: \(subprotocol)\r\n"
        }
        text += "\r\n"
        return Array(text.utf8)
    }
}
