/// A protocol violation by the peer, a limit it exceeded, or a failed opening handshake.
///
/// Every framing error maps to exactly one close code here (`closeCode`), so the mapping from
/// "what went wrong" to "what we tell the peer" lives in one place.
public struct WebSocketError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What went wrong, independent of the human-readable message.
    public enum Code: String, Equatable, Sendable {
        /// RSV1, RSV2 or RSV3 was set, but no extension was negotiated.
        case reservedBitsSet
        /// The opcode is one of the reserved values 3-7 or 11-15.
        case reservedOpcode
        /// A server received a frame without a mask.
        case unmaskedFrame
        /// A client received a masked frame.
        case maskedFrame
        /// A control frame had a payload longer than 125 bytes.
        case controlFrameTooLong
        /// A control frame had FIN clear.
        case fragmentedControlFrame
        /// A 64-bit payload length had its most significant bit set.
        case invalidLength
        /// A payload length was not encoded in the minimal number of bytes.
        case nonMinimalLength
        /// A continuation frame arrived while no fragmented message was in progress.
        case unexpectedContinuation
        /// A new text or binary frame arrived in the middle of a fragmented message.
        case expectedContinuation
        /// A frame payload exceeded `maxFrameSize`.
        case frameTooBig
        /// A message exceeded `maxMessageSize`.
        case messageTooBig
        /// A message was split into more than `maxFragments` frames.
        case tooManyFragments
        /// A text message or a close reason was not valid UTF-8.
        case invalidUTF8
        /// A Close frame had a one-byte payload.
        case invalidClosePayload
        /// A Close frame carried a status code that must not be sent.
        case invalidCloseCode
        /// The opening handshake was malformed, refused or answered wrongly.
        case handshakeFailed
        /// The opening handshake header block exceeded `maxHandshakeHeaderBytes`.
        case handshakeTooLarge
    }

    /// What went wrong.
    public var code: Code
    /// A sentence naming the problem and the offending value where there is one.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The close code sent to the peer when this error fails an open connection.
    ///
    /// RFC 6455 7.4.1: 1002 for "a protocol error", 1007 for "data within a message that was not
    /// consistent with the type of the message (e.g., non-UTF-8 [RFC3629] data within a text
    /// message)", 1009 for "a message that is too big for it to process".
    public var closeCode: CloseCode {
        switch code {
        case .invalidUTF8:
            return .invalidPayload
        case .frameTooBig, .messageTooBig, .tooManyFragments:
            return .messageTooBig
        case .reservedBitsSet, .reservedOpcode, .unmaskedFrame, .maskedFrame,
            .controlFrameTooLong, .fragmentedControlFrame, .invalidLength, .nonMinimalLength,
            .unexpectedContinuation, .expectedContinuation, .invalidClosePayload,
            .invalidCloseCode, .handshakeFailed, .handshakeTooLarge:
            return .protocolError
        }
    }

    /// `code: message`.
    public var description: String {
        "\(code.rawValue): \(message)"
    }
}
