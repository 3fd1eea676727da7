extension FrameParser {
    /// Parses and validates the header at `readIndex`, consuming it; `nil` if incomplete.
    ///
    /// Each check runs as soon as the bytes deciding it are present, so an invalid frame is
    /// refused even when the rest of its header never arrives.
    mutating func parseHeader() throws -> FrameHeader? {
        let available = buffer.count - readIndex
        guard available >= 2 else { return nil }
        let byte0 = buffer[readIndex]
        let byte1 = buffer[readIndex + 1]
        let fin = byte0 & 0x80 != 0

        // RFC 6455 5.2: "RSV1, RSV2, RSV3: 1 bit each. MUST be 0 unless an extension is
        // negotiated that defines meanings for non-zero values. If a nonzero value is received
        // and none of the negotiated extensions defines the meaning of such a nonzero value,
        // the receiving endpoint MUST _Fail the WebSocket Connection_."
        guard byte0 & 0x70 == 0 else {
            throw WebSocketError(.reservedBitsSet, "reserved bits \(String((byte0 & 0x70) >> 4, radix: 2)) set without an extension")
        }
        // "If an unknown opcode is received, the receiving endpoint MUST _Fail the WebSocket
        // Connection_."
        guard let opcode = Opcode(rawValue: byte0 & 0x0F) else {
            throw WebSocketError(.reservedOpcode, "reserved opcode \(byte0 & 0x0F)")
        }
        let masked = byte1 & 0x80 != 0
        switch role {
        case .server:
            // 5.1: "The server MUST close the connection upon receiving a frame that is not
            // masked. In this case, a server MAY send a Close frame with a status code of 1002
            // (protocol error)".
            guard masked else { throw WebSocketError(.unmaskedFrame, "client frame is not masked") }
        case .client:
            // 5.1: "A client MUST close a connection if it detects a masked frame. In this
            // case, it MAY use the status code 1002 (protocol error)".
            guard !masked else { throw WebSocketError(.maskedFrame, "server frame is masked") }
        }
        let length7 = Int(byte1 & 0x7F)
        if opcode.isControl {
            // 5.5: "All control frames MUST have a payload length of 125 bytes or less and MUST
            // NOT be fragmented."
            guard fin else {
                throw WebSocketError(.fragmentedControlFrame, "control frame \(opcode) without FIN")
            }
            guard length7 <= 125 else {
                throw WebSocketError(.controlFrameTooLong, "control frame \(opcode) longer than 125 bytes")
            }
        } else {
            try checkSequence(opcode)
        }

        var offset = 2
        var length = length7
        if length7 == 126 {
            guard available >= 4 else { return nil }
            length = Int(buffer[readIndex + 2]) << 8 | Int(buffer[readIndex + 3])
            // 5.2: "the minimal number of bytes MUST be used to encode the length"
            guard length >= 126 else {
                throw WebSocketError(.nonMinimalLength, "16-bit length \(length) fits in 7 bits")
            }
            offset = 4
        } else if length7 == 127 {
            guard available >= 10 else { return nil }
            var value: UInt64 = 0
            for index in 0..<8 {
                value = value << 8 | UInt64(buffer[readIndex + 2 + index])
            }
            // 5.2: "If 127, the following 8 bytes interpreted as a 64-bit unsigned integer (the
            // most significant bit MUST be 0) are the payload length."
            guard value & (1 << 63) == 0 else {
                throw WebSocketError(.invalidLength, "64-bit length has its most significant bit set")
            }
            guard value > 0xFFFF else {
                throw WebSocketError(.nonMinimalLength, "64-bit length \(value) fits in 16 bits")
            }
            // With the top bit clear the value fits in Int; the limits below bound it further.
            length = Int(value)
            offset = 10
        }
        try checkLimits(opcode: opcode, length: length)

        var maskingKey: MaskingKey?
        if masked {
            guard available >= offset + 4 else { return nil }
            let base = readIndex + offset
            maskingKey = MaskingKey(buffer[base], buffer[base + 1], buffer[base + 2], buffer[base + 3])
            offset += 4
        }
        readIndex += offset
        commitSequence(opcode: opcode, fin: fin, length: length)
        return FrameHeader(fin: fin, opcode: opcode, payloadLength: length, maskingKey: maskingKey)
    }

    /// RFC 6455 5.4 ordering rules for data frames.
    private func checkSequence(_ opcode: Opcode) throws {
        if opcode == .continuation {
            // A continuation needs a message started by a non-final text or binary frame.
            guard isInFragmentedMessage else {
                throw WebSocketError(.unexpectedContinuation, "continuation frame without a message in progress")
            }
        } else if isInFragmentedMessage {
            // 5.4: "The fragments of one message MUST NOT be interleaved between the fragments
            // of another message unless an extension has been negotiated that can interpret the
            // interleaving."
            throw WebSocketError(.expectedContinuation, "\(opcode) frame inside a fragmented message")
        }
    }

    private func checkLimits(opcode: Opcode, length: Int) throws {
        // Control frames are at most 125 bytes, already checked.
        guard !opcode.isControl else { return }
        var soFar = 0
        var fragments = 0
        if opcode == .continuation, case .fragmented(_, let length, let count) = message {
            soFar = length
            fragments = count
        }
        guard length <= configuration.maxMessageSize - soFar else {
            throw WebSocketError(.messageTooBig, "message of at least \(soFar + length) bytes exceeds \(configuration.maxMessageSize)")
        }
        guard length <= configuration.maxFrameSize else {
            throw WebSocketError(.frameTooBig, "frame of \(length) bytes exceeds \(configuration.maxFrameSize)")
        }
        if opcode == .continuation {
            guard fragments < configuration.maxFragments else {
                throw WebSocketError(.tooManyFragments, "message split into more than \(configuration.maxFragments) frames")
            }
        }
    }

    private mutating func commitSequence(opcode: Opcode, fin: Bool, length: Int) {
        guard !opcode.isControl else { return }
        if fin {
            message = .none
        } else if case .fragmented(let first, let soFar, let count) = message, opcode == .continuation {
            message = .fragmented(opcode: first, length: soFar + length, fragments: count + 1)
        } else {
            message = .fragmented(opcode: opcode, length: length, fragments: 1)
        }
    }
}
