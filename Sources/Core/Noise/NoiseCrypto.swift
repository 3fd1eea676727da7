internal import CryptoPrimitives

/// The primitives of `Noise_*_25519_ChaChaPoly_SHA256` (Noise revision 34, sections 4 and 12),
/// each a thin call into CryptoPrimitives (OpenSSL's libcrypto), the cipher into `NoiseChaChaPoly`.
enum NoiseCrypto {
    /// "DHLEN = 32" (12.1).
    static let dhLength = 32
    /// "HASHLEN = 32", "BLOCKLEN = 64" (12.5); only HASHLEN matters to the protocol.
    static let hashLength = 32
    /// The ChaChaPoly authentication tag: "encrypted data ... plus a 16-byte authentication tag".
    static let tagLength = 16
    /// "Noise messages ... are ... always less than or equal to 65535 bytes in length" (3).
    static let maxMessageLength = 65535

    /// `DH(key_pair, public_key)`: X25519 (12.1). For a low-order public key the result is all
    /// zeros; 12.1 lets an implementation return those or "signal an error", and we refuse
    /// (`.invalidKey`) so a peer cannot force a known shared secret.
    static func dh(privateKey: [UInt8], publicKey: [UInt8]) throws(NoiseError) -> [UInt8] {
        do {
            let remote = try X25519.PublicKey(rawRepresentation: publicKey)
            return try X25519.sharedSecret(privateKeyBytes: privateKey, remote)
        } catch {
            throw NoiseError(.invalidKey, "X25519 with the remote public key failed: \(error)")
        }
    }

    /// The X25519 public key of a 32-byte private key.
    static func publicKey(ofPrivateKey privateKey: [UInt8]) throws(NoiseError) -> [UInt8] {
        do {
            return try X25519.PrivateKey(rawRepresentation: privateKey).publicKey.rawRepresentation
        } catch {
            throw NoiseError(.invalidKey, "an X25519 private key must be 32 bytes, got \(privateKey.count)")
        }
    }

    /// The 96-bit ChaChaPoly nonce: "32 bits of zeros followed by the little-endian encoding
    /// of n" (12.3).
    static func nonceBytes(_ n: UInt64) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 12)
        writeNonce(n, into: &bytes)
        return bytes
    }

    /// Writes the nonce of `n` into the 12 bytes of `bytes` (whose first four stay zero).
    static func writeNonce(_ n: UInt64, into bytes: inout [UInt8]) {
        for index in 0..<8 {
            bytes[4 + index] = UInt8(truncatingIfNeeded: n >> (8 * UInt64(index)))
        }
    }

    /// `ENCRYPT(k, n, ad, plaintext)`: ciphertext followed by the 16-byte tag.
    static func encrypt(key: NoiseChaChaPoly, nonce: UInt64, ad: [UInt8], plaintext: [UInt8]) -> [UInt8] {
        var sealed = [UInt8]()
        sealed.reserveCapacity(plaintext.count + tagLength)
        sealed.append(contentsOf: plaintext)
        key.seal(nonce: nonce, ad: ad, buffer: &sealed, from: 0)
        return sealed
    }

    /// `DECRYPT(k, n, ad, ciphertext)`: the plaintext, or `.decryptFailed`.
    static func decrypt(key: NoiseChaChaPoly, nonce: UInt64, ad: [UInt8], ciphertext: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard ciphertext.count >= tagLength else {
            throw NoiseError(.badMessageLength, "a ciphertext of \(ciphertext.count) bytes is shorter than its tag")
        }
        guard let plaintext = key.open(nonce: nonce, ad: ad, ciphertext: ciphertext) else {
            throw NoiseError(.decryptFailed, "ChaChaPoly authentication failed (nonce \(nonce))")
        }
        return plaintext
    }

    /// `HASH(data)`: SHA-256.
    static func hash(_ data: [UInt8]) -> [UInt8] {
        Digest.sha256(data)
    }

    /// `HMAC-HASH(key, data)` (4.3).
    static func hmac(key: [UInt8], data: [UInt8]) -> [UInt8] {
        Digest.hmacSHA256(key: key, data: data)
    }

    /// `HKDF(chaining_key, input_key_material, num_outputs)` exactly as section 4.3 defines it:
    ///
    /// "Sets temp_key = HMAC-HASH(chaining_key, input_key_material).
    ///  Sets output1 = HMAC-HASH(temp_key, byte(0x01)).
    ///  Sets output2 = HMAC-HASH(temp_key, output1 || byte(0x02)).
    ///  If num_outputs == 2 then returns the pair (output1, output2).
    ///  Sets output3 = HMAC-HASH(temp_key, output2 || byte(0x03)).
    ///  Returns the triple (output1, output2, output3)."
    static func hkdf(chainingKey: [UInt8], inputKeyMaterial: [UInt8], outputs: Int) -> [[UInt8]] {
        precondition(outputs == 2 || outputs == 3, "Noise HKDF has two or three outputs")
        let tempKey = hmac(key: chainingKey, data: inputKeyMaterial)
        let output1 = hmac(key: tempKey, data: [0x01])
        let output2 = hmac(key: tempKey, data: output1 + [0x02])
        guard outputs == 3 else { return [output1, output2] }
        let output3 = hmac(key: tempKey, data: output2 + [0x03])
        return [output1, output2, output3]
    }
}
