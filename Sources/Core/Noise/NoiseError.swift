/// Everything that can go wrong in a Noise handshake or transport session.
///
/// A misbehaving peer (a forged, truncated, replayed or reordered message, a bad public key) is
/// always one of these values, never a trap: the caller decides to close the link.
public struct NoiseError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What went wrong, independent of the human-readable message.
    public enum Code: String, Equatable, Sendable {
        /// A ciphertext failed ChaChaPoly authentication: it was altered, replayed, reordered or
        /// encrypted with another key.
        case decryptFailed
        /// A received message was shorter or longer than its pattern allows.
        case badMessageLength
        /// A message (or a payload that would produce one) exceeds the 65535-byte Noise limit.
        case messageTooLong
        /// A call came at the wrong time: writing when it is the peer's turn, reading after the
        /// handshake, using a session that already failed, or taking the transport twice.
        case wrongState
        /// A key had the wrong length, or a Diffie-Hellman with it gave no usable result.
        case invalidKey
        /// A key the pattern needs (local static, remote static, pre-shared key) was not given, or
        /// one was given that the pattern does not use.
        case missingKey
        /// The protocol name is malformed or names a pattern, DH, cipher or hash not implemented.
        case unsupportedProtocol
        /// The 64-bit nonce reached 2^64-1, the value the specification reserves.
        case nonceExhausted
    }

    /// What went wrong.
    public var code: Code
    /// A sentence naming the problem.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `code: message`.
    public var description: String { "\(code.rawValue): \(message)" }
}
