/// An X25519 key pair as raw bytes: a 32-byte private key and its 32-byte public key.
public struct NoiseKeyPair: Equatable, Sendable {
    /// The 32-byte private key, as stored in a key file.
    public let privateKey: [UInt8]
    /// The 32-byte public key derived from it.
    public let publicKey: [UInt8]

    /// The key pair of a 32-byte private key; `.invalidKey` for any other length.
    public init(privateKey: [UInt8]) throws(NoiseError) {
        guard privateKey.count == NoiseCrypto.dhLength else {
            throw NoiseError(.invalidKey, "an X25519 private key must be 32 bytes, got \(privateKey.count)")
        }
        self.privateKey = privateKey
        self.publicKey = try NoiseCrypto.publicKey(ofPrivateKey: privateKey)
    }

    /// `GENERATE_KEYPAIR()` (12.1): a fresh key pair from 32 bytes of `random`.
    public static func generate(using random: NoiseRandomSource = .system) -> NoiseKeyPair {
        let bytes = random.bytes(NoiseCrypto.dhLength)
        do {
            return try NoiseKeyPair(privateKey: bytes)
        } catch {
            preconditionFailure("a random source returned \(bytes.count) bytes when asked for 32")
        }
    }
}

/// Where ephemeral keys come from: the system's cryptographic generator, or a fixed sequence in
/// tests.
public struct NoiseRandomSource: Sendable {
    /// Returns exactly the requested number of random bytes.
    public let bytes: @Sendable (Int) -> [UInt8]

    /// A source calling `bytes(count)`; it must return `count` bytes.
    public init(bytes: @escaping @Sendable (Int) -> [UInt8]) {
        self.bytes = bytes
    }

    /// `SystemRandomNumberGenerator`: `getrandom(2)` on Linux, a cryptographically secure source.
    public static let system = NoiseRandomSource { count in
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in generator.next() }
    }
}
