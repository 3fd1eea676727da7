extension WebSocketConnection {
    /// Handles a received Close frame.
    mutating func handleClose(_ payload: [UInt8], into events: inout [WebSocketEvent]) {
        var code: CloseCode?
        var reason = ""
        if !payload.isEmpty {
            // RFC 6455 5.5.1: "If there is a body, the first two bytes of the body MUST be a
            // 2-byte unsigned integer (in network byte order) representing a status code".
            guard payload.count >= 2 else {
                fail(WebSocketError(.invalidClosePayload, "close frame with a 1-byte payload"), into: &events)
                return
            }
            let received = CloseCode(UInt16(payload[0]) << 8 | UInt16(payload[1]))
            // 7.4: codes outside the assigned and registrable ranges, and the reserved 1005,
            // 1006 and 1015, are a protocol error.
            guard received.isValidOnWire else {
                fail(WebSocketError(.invalidCloseCode, "close code \(received.rawValue) must not be sent"), into: &events)
                return
            }
            // 5.5.1: "Following the 2-byte integer, the body MAY contain UTF-8-encoded data".
            var validator = UTF8Validator()
            guard validator.validate(payload[2...]), validator.isAtCharacterBoundary else {
                fail(WebSocketError(.invalidUTF8, "close reason is not valid UTF-8"), into: &events)
                return
            }
            code = received
            reason = String(decoding: payload[2...], as: UTF8.self)
        }
        if state == .open {
            // 5.5.1: "If an endpoint receives a Close frame and did not previously send a Close
            // frame, the endpoint MUST send a Close frame in response. (When sending a Close
            // frame in response, the endpoint typically echos the status code it received.)"
            events.append(.send(closeFrame(code ?? .normal, reason: "")))
        }
        // A fragmented message cut short by the Close is dropped.
        state = .closed
        messageBuffer = []
        messageOpcode = nil
        events.append(.closed(code: code, reason: reason))
    }

    /// Fails the connection: RFC 6455 7.1.7, "_Fail the WebSocket Connection_ [...] the
    /// endpoint MAY send a Close frame with an appropriate status code" — we always do, unless
    /// our Close was already sent.
    mutating func fail(_ error: WebSocketError, into events: inout [WebSocketEvent]) {
        if state == .open {
            events.append(.send(closeFrame(error.closeCode, reason: error.message)))
        }
        state = .closed
        messageBuffer = []
        messageOpcode = nil
        events.append(.failed(error))
    }

    /// A Close frame; the reason is cut at a character boundary to fit 125 bytes in total.
    func closeFrame(_ code: CloseCode, reason: String) -> [UInt8] {
        precondition(code.isValidOnWire, "close code \(code.rawValue) must not be sent")
        var payload: [UInt8] = [UInt8(truncatingIfNeeded: code.rawValue >> 8), UInt8(truncatingIfNeeded: code.rawValue)]
        payload.append(contentsOf: Self.truncatedUTF8(reason, maxBytes: 123))
        return encode(opcode: .close, payload: payload)
    }

    /// The UTF-8 of `text`, cut to at most `maxBytes` without splitting a character.
    static func truncatedUTF8(_ text: String, maxBytes: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        for scalar in text.unicodeScalars {
            let encoded = Array(String(scalar).utf8)
            guard bytes.count + encoded.count <= maxBytes else { break }
            bytes.append(contentsOf: encoded)
        }
        return bytes
    }

    /// One frame with FIN set, masked when this is the client.
    func encode(opcode: Opcode, payload: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        payload.withUnsafeBytes { buffer in
            FrameEncoder.append(opcode: opcode, payload: buffer, maskingKey: nextMaskingKey(), to: &output)
        }
        return output
    }

    /// A fresh masking key for a client, `nil` for a server. RFC 6455 5.1: "a client MUST mask
    /// all frames that it sends to the server" and "A server MUST NOT mask any frames that it
    /// sends to the client."
    func nextMaskingKey() -> MaskingKey? {
        role == .client ? MaskingKey(maskingKeySource()) : nil
    }
}
