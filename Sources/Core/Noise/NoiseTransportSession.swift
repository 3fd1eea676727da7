/// The transport phase after a handshake (Noise revision 34, section 5 "Split"): one
/// `CipherState` per direction, each counting its own nonces.
///
/// Every message carries the next nonce implicitly, so a message altered, replayed, reordered or
/// dropped before the next one fails ChaChaPoly authentication. The first such failure breaks the
/// session: it refuses every later call with `.wrongState`, and the caller closes the link.
public struct NoiseTransportSession: Sendable {
    /// The largest plaintext one transport message carries: 65535 bytes minus the 16-byte tag.
    public static let maxPlaintextLength = NoiseCrypto.maxMessageLength - NoiseCrypto.tagLength

    /// The bytes a transport message adds to its plaintext: the 16-byte tag.
    public static let tagLength = NoiseCrypto.tagLength

    /// The handshake hash `h`, identical on both sides: usable for channel binding.
    public let handshakeHash: [UInt8]
    /// The peer's static public key, if the pattern sent or pre-shared one.
    public let remoteStaticKey: [UInt8]?

    private enum State: Sendable {
        /// Working. A one-way pattern has no receiving cipher on the initiator and no sending
        /// cipher on the responder.
        case open(sending: NoiseCipherState?, receiving: NoiseCipherState?)
        /// A message failed to decrypt, or a nonce ran out.
        case broken
    }

    private var state: State

    init(sending: NoiseCipherState?, receiving: NoiseCipherState?, handshakeHash: [UInt8], remoteStaticKey: [UInt8]?) {
        self.state = .open(sending: sending, receiving: receiving)
        self.handshakeHash = handshakeHash
        self.remoteStaticKey = remoteStaticKey
    }

    /// Whether an earlier failure broke the session.
    public var isBroken: Bool {
        if case .broken = state { return true }
        return false
    }

    /// The nonce the next `encrypt` uses (the number of messages sent so far).
    public var sendingNonce: UInt64? {
        guard case .open(let sending, _) = state else { return nil }
        return sending?.nonce
    }

    /// The nonce the next `decrypt` expects (the number of messages received so far).
    public var receivingNonce: UInt64? {
        guard case .open(_, let receiving) = state else { return nil }
        return receiving?.nonce
    }

    /// Encrypts one transport message (`EncryptWithAd` with an empty `ad`). A plaintext over
    /// `maxPlaintextLength` throws `.messageTooLong` and leaves the session as it was.
    public mutating func encrypt(_ plaintext: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard case .open(var sending?, let receiving) = state else {
            throw NoiseError(.wrongState, isBroken ? "the session is broken" : "a one-way responder cannot send")
        }
        guard plaintext.count <= Self.maxPlaintextLength else {
            throw NoiseError(.messageTooLong, "a plaintext of \(plaintext.count) bytes exceeds \(Self.maxPlaintextLength)")
        }
        do throws(NoiseError) {
            let message = try sending.encrypt(withAd: [], plaintext: plaintext)
            state = .open(sending: sending, receiving: receiving)
            return message
        } catch {
            state = .broken
            throw error
        }
    }

    /// Encrypts one transport message in place: `buffer[start...]` is the plaintext, encrypted
    /// where it lies, and the tag is appended (what `encrypt` returns, without copies; the bytes
    /// before `start`, a frame header, are left alone). Fails as `encrypt` does.
    public mutating func encrypt(inPlace buffer: inout [UInt8], from start: Int) throws(NoiseError) {
        guard case .open(var sending?, let receiving) = state else {
            throw NoiseError(.wrongState, isBroken ? "the session is broken" : "a one-way responder cannot send")
        }
        guard buffer.count - start <= Self.maxPlaintextLength else {
            throw NoiseError(
                .messageTooLong, "a plaintext of \(buffer.count - start) bytes exceeds \(Self.maxPlaintextLength)")
        }
        do throws(NoiseError) {
            try sending.encrypt(inPlace: &buffer, from: start)
            state = .open(sending: sending, receiving: receiving)
        } catch {
            state = .broken
            throw error
        }
    }

    /// Decrypts the next transport message, which must be the one the peer sent right after the
    /// previous one decrypted here. Any failure breaks the session.
    public mutating func decrypt(_ message: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard case .open(let sending, var receiving?) = state else {
            throw NoiseError(.wrongState, isBroken ? "the session is broken" : "a one-way initiator cannot receive")
        }
        do throws(NoiseError) {
            guard message.count <= NoiseCrypto.maxMessageLength else {
                throw NoiseError(.messageTooLong, "a transport message of \(message.count) bytes exceeds 65535")
            }
            let plaintext = try receiving.decrypt(withAd: [], ciphertext: message)
            state = .open(sending: sending, receiving: receiving)
            return plaintext
        } catch {
            state = .broken
            throw error
        }
    }

    /// `Rekey()` on the sending cipher (section 11.3). The peer must call `rekeyReceiving()` at the
    /// same point in the message stream; the application protocol decides when.
    public mutating func rekeySending() throws(NoiseError) {
        guard case .open(var sending?, let receiving) = state else {
            throw NoiseError(.wrongState, "no sending cipher to rekey")
        }
        sending.rekey()
        state = .open(sending: sending, receiving: receiving)
    }

    /// `Rekey()` on the receiving cipher, matching the peer's `rekeySending()`.
    public mutating func rekeyReceiving() throws(NoiseError) {
        guard case .open(let sending, var receiving?) = state else {
            throw NoiseError(.wrongState, "no receiving cipher to rekey")
        }
        receiving.rekey()
        state = .open(sending: sending, receiving: receiving)
    }
}
