extension WebSocketConnection {
    /// The bytes of a text message to write, or none when the connection is no longer open
    /// (RFC 6455 5.5.1: "The application MUST NOT send any more data frames after sending a
    /// Close frame").
    public mutating func sendText(_ text: String) -> [UInt8] {
        guard state == .open else { return [] }
        var text = text
        let key = nextMaskingKey()
        var output: [UInt8] = []
        text.withUTF8 { utf8 in
            FrameEncoder.append(opcode: .text, payload: UnsafeRawBufferPointer(utf8), maskingKey: key, to: &output)
        }
        return output
    }

    /// The bytes of a text message to write whose payload is already UTF-8 bytes (serialized
    /// JSON), with no `String` made; none when the connection is no longer open. The caller
    /// guarantees the bytes are valid UTF-8 (RFC 6455 5.6: "The "Payload data" is text data
    /// encoded as UTF-8").
    public mutating func sendText(utf8 bytes: [UInt8]) -> [UInt8] {
        guard state == .open else { return [] }
        return encode(opcode: .text, payload: bytes)
    }

    /// The bytes of a binary message to write, or none when the connection is no longer open.
    public mutating func sendBinary(_ bytes: [UInt8]) -> [UInt8] {
        guard state == .open else { return [] }
        return encode(opcode: .binary, payload: bytes)
    }

    /// The bytes of a Ping to write, or none when the connection is no longer open.
    ///
    /// - Parameter payload: at most 125 bytes (RFC 6455 5.5: "All control frames MUST have a
    ///   payload length of 125 bytes or less").
    public mutating func ping(_ payload: [UInt8] = []) -> [UInt8] {
        precondition(payload.count <= 125, "a ping payload is at most 125 bytes")
        guard state == .open else { return [] }
        return encode(opcode: .ping, payload: payload)
    }

    /// The bytes of an unsolicited Pong (a one-way heartbeat, RFC 6455 5.5.3), or none when the
    /// connection is no longer open.
    public mutating func pong(_ payload: [UInt8] = []) -> [UInt8] {
        precondition(payload.count <= 125, "a pong payload is at most 125 bytes")
        guard state == .open else { return [] }
        return encode(opcode: .pong, payload: payload)
    }

    /// Starts the closing handshake: the bytes of our Close frame, or none when a Close was
    /// already sent or the connection is closed. The connection is `.closing` until the peer's
    /// Close arrives (reported as `.closed`); the caller bounds that wait with its own timer.
    ///
    /// - Parameters:
    ///   - code: a code allowed on the wire (`CloseCode.isValidOnWire`), e.g. `.normal` or
    ///     `.goingAway`.
    ///   - reason: UTF-8 text, cut to 123 bytes at a character boundary.
    public mutating func close(code: CloseCode = .normal, reason: String = "") -> [UInt8] {
        guard state == .open else { return [] }
        let frame = closeFrame(code, reason: reason)
        state = .closing
        return frame
    }
}
