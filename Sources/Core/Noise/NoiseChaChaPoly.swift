internal import COpenSSL

/// ChaCha20-Poly1305 (RFC 8439) under one 32-byte key, on OpenSSL's libcrypto: the one type of
/// the Noise module that calls OpenSSL. It keeps one cipher context per direction for the key's
/// life, so a message costs a nonce set and the cipher, sealed in place in the caller's buffer,
/// instead of an AEAD context, a nonce object and a sealed box made and taken apart per message
/// (as swift-crypto's `ChaChaPoly` did; the Noise tests check it against an RFC 8439 reference in
/// plain Swift, `ChaChaPolyReference`).
///
/// Unchecked Sendable: a context is mutated by every call, so one key is used from one thread at
/// a time (a `CipherState` belongs to one link, and a link to one event loop).
final class NoiseChaChaPoly: @unchecked Sendable {
    /// "16-byte authentication tag" (Noise 12.3).
    static let tagLength = 16

    /// The context that seals; the key is set once (`EVP_EncryptInit_ex` with a key and no IV).
    private let sealing: OpaquePointer
    /// The context that opens, made on the first `open` (a sending key never opens).
    private var opening: OpaquePointer?
    /// The key, kept only to set up `opening` on first use.
    private var key: [UInt8]
    /// The 12-byte nonce of the current call, reused (no allocation per message).
    private var iv = [UInt8](repeating: 0, count: 12)

    init(key: [UInt8]) {
        precondition(key.count == 32, "a ChaChaPoly key is 32 bytes")
        self.key = key
        self.sealing = Self.context(key: key, encrypting: true)
    }

    deinit {
        EVP_CIPHER_CTX_free(sealing)
        if let opening { EVP_CIPHER_CTX_free(opening) }
        for index in key.indices { key[index] = 0 }
    }

    /// `ENCRYPT(k, n, ad, plaintext)` in place: encrypts `buffer[start...]` and appends the tag.
    func seal(nonce: UInt64, ad: [UInt8], buffer: inout [UInt8], from start: Int) {
        precondition(start <= buffer.count, "the plaintext starts inside the buffer")
        let length = buffer.count - start
        buffer.append(contentsOf: repeatElement(0, count: Self.tagLength))
        setIV(nonce)
        var outLength: Int32 = 0
        let ok = buffer.withUnsafeMutableBytes { all -> Bool in
            let text = all.baseAddress!.advanced(by: start).assumingMemoryBound(to: UInt8.self)
            guard EVP_EncryptInit_ex(sealing, nil, nil, nil, &iv) == 1 else { return false }
            if !ad.isEmpty, EVP_EncryptUpdate(sealing, nil, &outLength, ad, Int32(ad.count)) != 1 { return false }
            // In place: OpenSSL allows the output to be the input exactly (a stream cipher).
            if length > 0, EVP_EncryptUpdate(sealing, text, &outLength, text, Int32(length)) != 1 { return false }
            guard EVP_EncryptFinal_ex(sealing, text.advanced(by: length), &outLength) == 1 else { return false }
            return EVP_CIPHER_CTX_ctrl(sealing, EVP_CTRL_AEAD_GET_TAG, Int32(Self.tagLength), text.advanced(by: length)) == 1
        }
        // Key and nonce sizes are fixed by this type; a failure here is our bug or no memory.
        precondition(ok, "OpenSSL's ChaCha20-Poly1305 failed to seal")
    }

    /// `DECRYPT(k, n, ad, ciphertext)`: the plaintext, or nil when the tag does not match.
    /// `ciphertext` holds the tag at its end (at least `tagLength` bytes: the caller checks).
    func open(nonce: UInt64, ad: [UInt8], ciphertext: [UInt8]) -> [UInt8]? {
        precondition(ciphertext.count >= Self.tagLength, "a ciphertext holds its tag")
        let context: OpaquePointer
        if let opening {
            context = opening
        } else {
            context = Self.context(key: key, encrypting: false)
            opening = context
        }
        let length = ciphertext.count - Self.tagLength
        // One byte more than the plaintext, so that even an empty one has an address for Final
        // (which writes nothing for a stream cipher); dropped before returning.
        var plaintext = [UInt8](repeating: 0, count: length + 1)
        setIV(nonce)
        var outLength: Int32 = 0
        let ok = plaintext.withUnsafeMutableBufferPointer { out -> Bool in
            ciphertext.withUnsafeBytes { input -> Bool in
                let text = input.baseAddress!.assumingMemoryBound(to: UInt8.self)
                guard EVP_DecryptInit_ex(context, nil, nil, nil, &iv) == 1 else { return false }
                if !ad.isEmpty, EVP_DecryptUpdate(context, nil, &outLength, ad, Int32(ad.count)) != 1 { return false }
                if length > 0, EVP_DecryptUpdate(context, out.baseAddress, &outLength, text, Int32(length)) != 1 {
                    return false
                }
                // SET_TAG copies the tag; OpenSSL's prototype is not const.
                let tag = UnsafeMutableRawPointer(mutating: text.advanced(by: length))
                guard EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_SET_TAG, Int32(Self.tagLength), tag) == 1 else {
                    return false
                }
                return EVP_DecryptFinal_ex(context, out.baseAddress!.advanced(by: length), &outLength) == 1
            }
        }
        guard ok else { return nil }
        plaintext.removeLast()
        return plaintext
    }

    /// The 96-bit nonce of `n` (`NoiseCrypto.nonceBytes`) into the reused `iv`.
    private func setIV(_ n: UInt64) {
        NoiseCrypto.writeNonce(n, into: &iv)
    }

    /// A context for `EVP_chacha20_poly1305` with `key` set, in one direction.
    private static func context(key: [UInt8], encrypting: Bool) -> OpaquePointer {
        guard let context = EVP_CIPHER_CTX_new() else { preconditionFailure("EVP_CIPHER_CTX_new: out of memory") }
        let ok =
            encrypting
            ? EVP_EncryptInit_ex(context, EVP_chacha20_poly1305(), nil, key, nil)
            : EVP_DecryptInit_ex(context, EVP_chacha20_poly1305(), nil, key, nil)
        precondition(ok == 1, "EVP_chacha20_poly1305 with a 32-byte key failed")
        return context
    }
}
