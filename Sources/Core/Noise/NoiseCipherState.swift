/// A `CipherState` (Noise revision 34, section 5.1): a key `k` and a 64-bit counter `n`.
///
/// Before a key is set, encryption and decryption pass data through unchanged, as the
/// specification says; the handshake relies on that for its first tokens.
public struct NoiseCipherState: Sendable {
    /// "The maximum n value (2^64-1) is reserved for other use" (5.1).
    static let reservedNonce = UInt64.max

    /// `k`: 32 bytes, or `nil` for "empty" (made into a cipher key once, not once per message).
    private var key: NoiseChaChaPoly?
    /// `n`: the nonce the next encryption or decryption uses.
    public private(set) var nonce: UInt64

    /// `InitializeKey(key)`: sets `k` (32 bytes, or `nil` for empty) and `n = 0`.
    init(key: [UInt8]?) {
        precondition(key == nil || key?.count == 32, "a CipherState key is 32 bytes")
        self.key = key.map { NoiseChaChaPoly(key: $0) }
        self.nonce = 0
    }

    /// `HasKey()`.
    public var hasKey: Bool { key != nil }

    /// `SetNonce(nonce)`: for out-of-band nonces; the transport session never uses it.
    mutating func setNonce(_ nonce: UInt64) {
        self.nonce = nonce
    }

    /// `EncryptWithAd(ad, plaintext)`: "If k is non-empty returns ENCRYPT(k, n++, ad,
    /// plaintext). Otherwise returns plaintext."
    public mutating func encrypt(withAd ad: [UInt8], plaintext: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard let key else { return plaintext }
        try checkNonce()
        let ciphertext = NoiseCrypto.encrypt(key: key, nonce: nonce, ad: ad, plaintext: plaintext)
        nonce += 1
        return ciphertext
    }

    /// `EncryptWithAd(ad, plaintext)` with an empty `ad`, in place: encrypts `buffer[start...]`
    /// and appends the tag, so a transport message can be sealed inside the frame that carries it.
    public mutating func encrypt(inPlace buffer: inout [UInt8], from start: Int) throws(NoiseError) {
        guard let key else { return }
        try checkNonce()
        key.seal(nonce: nonce, ad: [], buffer: &buffer, from: start)
        nonce += 1
    }

    /// `DecryptWithAd(ad, ciphertext)`: "If k is non-empty returns DECRYPT(k, n++, ad,
    /// ciphertext). Otherwise returns ciphertext. If an authentication failure occurs in
    /// DECRYPT() then n is not incremented and an error is signaled to the caller."
    public mutating func decrypt(withAd ad: [UInt8], ciphertext: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard let key else { return ciphertext }
        try checkNonce()
        let plaintext = try NoiseCrypto.decrypt(key: key, nonce: nonce, ad: ad, ciphertext: ciphertext)
        nonce += 1
        return plaintext
    }

    /// `Rekey()`: "Sets k = REKEY(k)", where REKEY(k) is the first 32 bytes of
    /// `ENCRYPT(k, maxnonce, zerolen, zeros)` with 32 bytes of zeros (4.2). `n` is unchanged.
    public mutating func rekey() {
        guard let key else { return }
        let encrypted = NoiseCrypto.encrypt(
            key: key, nonce: Self.reservedNonce, ad: [], plaintext: [UInt8](repeating: 0, count: 32))
        self.key = NoiseChaChaPoly(key: Array(encrypted[..<32]))
    }

    /// "If incrementing n results in 2^64-1, then any further EncryptWithAd() or
    /// DecryptWithAd() calls will signal an error to the caller."
    private func checkNonce() throws(NoiseError) {
        guard nonce != Self.reservedNonce else {
            throw NoiseError(.nonceExhausted, "the nonce reached 2^64-1; the session must end")
        }
    }
}
