/// A `SymmetricState` (Noise revision 34, section 5.2): the chaining key `ck`, the handshake
/// hash `h` and the `CipherState` the handshake encrypts with.
struct NoiseSymmetricState: Sendable {
    private var cipher: NoiseCipherState
    private var chainingKey: [UInt8]
    /// `h`, also what `GetHandshakeHash()` returns.
    private(set) var handshakeHash: [UInt8]

    /// `InitializeSymmetric(protocol_name)`: "If protocol_name is less than or equal to HASHLEN
    /// bytes in length, sets h equal to protocol_name with zero bytes appended to make HASHLEN
    /// bytes. Otherwise sets h = HASH(protocol_name). Sets ck = h. Calls InitializeKey(empty)."
    init(protocolName: String) {
        let name = Array(protocolName.utf8)
        if name.count <= NoiseCrypto.hashLength {
            handshakeHash = name + [UInt8](repeating: 0, count: NoiseCrypto.hashLength - name.count)
        } else {
            handshakeHash = NoiseCrypto.hash(name)
        }
        chainingKey = handshakeHash
        cipher = NoiseCipherState(key: nil)
    }

    /// Whether the handshake cipher has a key (decides whether `s` is sent encrypted).
    var hasKey: Bool { cipher.hasKey }

    /// `MixKey(input_key_material)`: "Sets ck, temp_k = HKDF(ck, input_key_material, 2). If
    /// HASHLEN is 64, then truncates temp_k to 32 bytes. Calls InitializeKey(temp_k)."
    mutating func mixKey(_ inputKeyMaterial: [UInt8]) {
        let outputs = NoiseCrypto.hkdf(chainingKey: chainingKey, inputKeyMaterial: inputKeyMaterial, outputs: 2)
        chainingKey = outputs[0]
        cipher = NoiseCipherState(key: Array(outputs[1].prefix(32)))
    }

    /// `MixHash(data)`: "Sets h = HASH(h || data)."
    mutating func mixHash(_ data: [UInt8]) {
        handshakeHash = NoiseCrypto.hash(handshakeHash + data)
    }

    /// `MixKeyAndHash(input_key_material)`: "Sets ck, temp_h, temp_k = HKDF(ck,
    /// input_key_material, 3). Calls MixHash(temp_h). If HASHLEN is 64, then truncates temp_k to
    /// 32 bytes. Calls InitializeKey(temp_k)." Used for pre-shared keys.
    mutating func mixKeyAndHash(_ inputKeyMaterial: [UInt8]) {
        let outputs = NoiseCrypto.hkdf(chainingKey: chainingKey, inputKeyMaterial: inputKeyMaterial, outputs: 3)
        chainingKey = outputs[0]
        mixHash(outputs[1])
        cipher = NoiseCipherState(key: Array(outputs[2].prefix(32)))
    }

    /// `EncryptAndHash(plaintext)`: "Sets ciphertext = EncryptWithAd(h, plaintext), calls
    /// MixHash(ciphertext), and returns ciphertext."
    mutating func encryptAndHash(_ plaintext: [UInt8]) throws(NoiseError) -> [UInt8] {
        let ciphertext = try cipher.encrypt(withAd: handshakeHash, plaintext: plaintext)
        mixHash(ciphertext)
        return ciphertext
    }

    /// `DecryptAndHash(ciphertext)`: "Sets plaintext = DecryptWithAd(h, ciphertext), calls
    /// MixHash(ciphertext), and returns plaintext."
    mutating func decryptAndHash(_ ciphertext: [UInt8]) throws(NoiseError) -> [UInt8] {
        let plaintext = try cipher.decrypt(withAd: handshakeHash, ciphertext: ciphertext)
        mixHash(ciphertext)
        return plaintext
    }

    /// `Split()`: "Sets temp_k1, temp_k2 = HKDF(ck, zerolen, 2) ... Creates two new CipherState
    /// objects c1 and c2. Calls c1.InitializeKey(temp_k1) and c2.InitializeKey(temp_k2).
    /// Returns the pair (c1, c2)." `c1` carries initiator-to-responder messages.
    func split() -> (initiatorToResponder: NoiseCipherState, responderToInitiator: NoiseCipherState) {
        let outputs = NoiseCrypto.hkdf(chainingKey: chainingKey, inputKeyMaterial: [], outputs: 2)
        return (NoiseCipherState(key: Array(outputs[0].prefix(32))), NoiseCipherState(key: Array(outputs[1].prefix(32))))
    }
}
