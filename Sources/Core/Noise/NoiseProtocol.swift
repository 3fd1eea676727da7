/// A parsed Noise protocol name (Noise revision 34, section 8):
/// `Noise_<pattern>_<DH>_<cipher>_<hash>`.
///
/// Only the suite `25519_ChaChaPoly_SHA256` is implemented; every pattern of section 7 and the
/// deferred patterns of section 18, with `psk` modifiers, are.
public struct NoiseProtocol: Equatable, Sendable {
    /// The full name, e.g. `Noise_XXpsk3_25519_ChaChaPoly_SHA256`; hashed into `h` first.
    public let name: String
    /// The handshake pattern with its modifiers applied.
    public let pattern: NoiseHandshakePattern

    /// The one cipher suite implemented.
    public static let suite = "25519_ChaChaPoly_SHA256"

    /// Parses `name`; `.unsupportedProtocol` if it is malformed or names another suite.
    public init(name: String) throws(NoiseError) {
        let prefix = "Noise_"
        let suffix = "_" + Self.suite
        guard name.hasPrefix(prefix), name.hasSuffix(suffix), name.count > prefix.count + suffix.count else {
            throw NoiseError(.unsupportedProtocol, "\(name) is not Noise_<pattern>_\(Self.suite)")
        }
        self.name = name
        self.pattern = try NoiseHandshakePattern.named(String(name.dropFirst(prefix.count).dropLast(suffix.count)))
    }
}
