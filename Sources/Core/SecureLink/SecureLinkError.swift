import Noise

/// Everything that can go wrong on a secure link. A misbehaving peer is always one of these
/// values, never a trap; the caller closes the link.
public struct SecureLinkError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, independent of the sentence.
    public enum Kind: String, Sendable, Equatable {
        /// A handshake or transport message failed to decrypt: a wrong pairing code, a key the
        /// other side does not hold, a flipped bit, a replay, a reorder or a drop.
        case authenticationFailed
        /// A message was truncated, oversized, or carried a header the protocol does not allow.
        case malformed
        /// An application message exceeds `SecureLinkOptions.maxMessageBytes`.
        case messageTooLarge
        /// A call came at the wrong time (sealing before the handshake, any call after a failure).
        case wrongState
        /// A pairing code could not be read, or has the wrong length.
        case invalidCode
        /// A key or setting the link cannot use.
        case unsupported
    }

    /// What went wrong.
    public let kind: Kind
    /// A sentence naming the problem.
    public let message: String

    /// Creates an error.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// `kind: message`.
    public var description: String { "\(kind.rawValue): \(message)" }

    /// The link error for a Noise error met while handshaking: a length problem is `.malformed`,
    /// anything else (a failed decryption, a low-order key) `.authenticationFailed`.
    static func handshake(_ error: NoiseError, _ what: String) -> SecureLinkError {
        switch error.code {
        case .badMessageLength, .messageTooLong:
            return SecureLinkError(.malformed, "\(what): \(error.message)")
        case .wrongState:
            return SecureLinkError(.wrongState, "\(what): \(error.message)")
        case .unsupportedProtocol, .missingKey:
            return SecureLinkError(.unsupported, "\(what): \(error.message)")
        case .decryptFailed, .invalidKey, .nonceExhausted:
            return SecureLinkError(.authenticationFailed, "\(what): \(error.message)")
        }
    }
}
