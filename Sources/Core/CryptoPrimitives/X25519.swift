internal import COpenSSL

/// X25519 (RFC 7748) on OpenSSL's libcrypto: keys as raw 32-byte strings, as in key files and on
/// the wire.
///
/// A private key is kept as given; the scalar is clamped (RFC 7748 5: the three low bits and the
/// top bit cleared, bit 254 set) when it is used, as OpenSSL and swift-crypto both do, so a key
/// file's 32 bytes give the same public key whichever of them read it.
public enum X25519 {
    /// Keys and shared secrets are 32 bytes.
    public static let keyLength = 32

    /// A private key: 32 bytes.
    public struct PrivateKey: Sendable, Equatable {
        /// The 32 bytes as given (not clamped), as written to a key file.
        public let rawRepresentation: [UInt8]
        /// The public key: X25519(clamped key, 9).
        public let publicKey: PublicKey

        /// The key of exactly 32 bytes; `X25519Error` for any other length.
        public init(rawRepresentation: [UInt8]) throws(X25519Error) {
            guard rawRepresentation.count == X25519.keyLength else {
                throw X25519Error("an X25519 private key must be 32 bytes, got \(rawRepresentation.count)")
            }
            self.rawRepresentation = rawRepresentation
            let key = X25519.privateKey(rawRepresentation)
            defer { EVP_PKEY_free(key) }
            var publicBytes = [UInt8](repeating: 0, count: X25519.keyLength)
            var length = X25519.keyLength
            OpenSSLAlgorithms.check(
                EVP_PKEY_get_raw_public_key(key, &publicBytes, &length) == 1 && length == 32, "EVP_PKEY_get_raw_public_key")
            self.publicKey = PublicKey(checked: publicBytes)
        }

        /// A new key of 32 bytes from the operating system's random source.
        public static func generate() -> PrivateKey {
            do {
                return try PrivateKey(rawRepresentation: SecureRandom.bytes(X25519.keyLength))
            } catch {
                preconditionFailure("32 random bytes are a valid X25519 key: \(error)")
            }
        }
    }

    /// A public key: 32 bytes (any 32 bytes are accepted, RFC 7748 5).
    public struct PublicKey: Sendable, Equatable {
        /// The 32 bytes.
        public let rawRepresentation: [UInt8]

        /// The key of exactly 32 bytes; `X25519Error` for any other length.
        public init(rawRepresentation: [UInt8]) throws(X25519Error) {
            guard rawRepresentation.count == X25519.keyLength else {
                throw X25519Error("an X25519 public key must be 32 bytes, got \(rawRepresentation.count)")
            }
            self.rawRepresentation = rawRepresentation
        }

        fileprivate init(checked bytes: [UInt8]) { rawRepresentation = bytes }
    }

    /// X25519(private, public): the 32-byte shared secret. A low-order public key makes it all
    /// zeros; OpenSSL refuses that result (RFC 7748 6.1's check), and so does this call, with
    /// `X25519Error` (swift-crypto returned the zeros and its callers here refused them).
    public static func sharedSecret(_ privateKey: PrivateKey, _ publicKey: PublicKey) throws(X25519Error) -> [UInt8] {
        try sharedSecret(privateKeyBytes: privateKey.rawRepresentation, publicKey)
    }

    /// X25519 of 32 raw private bytes and a public key, as `sharedSecret(_:_:)`, without working
    /// out the private key's own public key first (a second scalar multiplication per DH that a
    /// handshake has no use for). `X25519Error` for a private key of any other length.
    public static func sharedSecret(privateKeyBytes: [UInt8], _ publicKey: PublicKey) throws(X25519Error) -> [UInt8] {
        guard privateKeyBytes.count == keyLength else {
            throw X25519Error("an X25519 private key must be 32 bytes, got \(privateKeyBytes.count)")
        }
        let local = self.privateKey(privateKeyBytes)
        defer { EVP_PKEY_free(local) }
        guard
            let remote = publicKey.rawRepresentation.withUnsafeBufferPointer({
                EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, nil, $0.baseAddress, 32)
            })
        else {
            preconditionFailure("EVP_PKEY_new_raw_public_key(X25519) failed: \(OpenSSLAlgorithms.lastError())")
        }
        defer { EVP_PKEY_free(remote) }
        guard let context = EVP_PKEY_CTX_new(local, nil) else { preconditionFailure("EVP_PKEY_CTX_new: out of memory") }
        defer { EVP_PKEY_CTX_free(context) }
        OpenSSLAlgorithms.check(EVP_PKEY_derive_init(context) == 1, "EVP_PKEY_derive_init")
        OpenSSLAlgorithms.check(EVP_PKEY_derive_set_peer_ex(context, remote, 0) == 1, "EVP_PKEY_derive_set_peer_ex")
        var secret = [UInt8](repeating: 0, count: keyLength)
        var length = keyLength
        guard EVP_PKEY_derive(context, &secret, &length) == 1, length == keyLength else {
            // The one failure of the derivation itself is an all-zero result.
            let reason = OpenSSLAlgorithms.lastError()
            throw X25519Error("X25519 with a low-order public key gives all zeros (\(reason))")
        }
        guard secret.contains(where: { $0 != 0 }) else {
            throw X25519Error("X25519 with a low-order public key gives all zeros")
        }
        return secret
    }

    /// An OpenSSL key of 32 raw private bytes (the caller frees it).
    private static func privateKey(_ raw: [UInt8]) -> OpaquePointer {
        precondition(raw.count == keyLength, "an X25519 private key is 32 bytes")
        guard let key = raw.withUnsafeBufferPointer({ EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, nil, $0.baseAddress, 32) })
        else {
            preconditionFailure("EVP_PKEY_new_raw_private_key(X25519) failed: \(OpenSSLAlgorithms.lastError())")
        }
        return key
    }
}

/// A refused X25519 key or result, with a sentence saying why.
public struct X25519Error: Error, Equatable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// Random bytes from the operating system's cryptographic source (`getrandom(2)` on Linux,
/// through the standard library's `SystemRandomNumberGenerator`).
public enum SecureRandom {
    /// `count` random bytes.
    public static func bytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        var out: [UInt8] = []
        out.reserveCapacity(count + 8)
        while out.count < count {
            let word = generator.next()
            for shift in stride(from: 0, to: 64, by: 8) { out.append(UInt8(truncatingIfNeeded: word >> UInt64(shift))) }
        }
        out.removeLast(out.count - count)
        return out
    }
}
