import Noise

extension SecureLink {
    static let pairingProtocolName = "Noise_XXpsk3_25519_ChaChaPoly_SHA256"
    static let knownProtocolName = "Noise_IK_25519_ChaChaPoly_SHA256"

    /// The slave's end of a pairing (`ordersync.pair.v1`): returns the link and its first message
    /// (`.send`). `payload` goes in message 3. The master's key is proved to belong to a holder
    /// of the code only by the first transport message it sends (the `paired` control message).
    public static func pairingInitiator(
        code: PairingCode, localStatic: NoiseKeyPair, payload: [UInt8], options: SecureLinkOptions = .init(),
        random: NoiseRandomSource = .system
    ) throws(SecureLinkError) -> (SecureLink, [Event]) {
        var handshake = try makeHandshake(
            pairingProtocolName, role: .initiator, prologue: SecureLinkSubprotocol.pairing, localStatic: localStatic,
            preSharedKeys: [code.preSharedKey], random: random)
        let first = try write(&handshake, payload: [], "pairing message 1")
        let link = SecureLink(
            state: .initiatorAwaitingResponse(handshake, finalPayload: payload), options: options, random: random)
        return (link, [.send(first)])
    }

    /// The slave's end of every later connection (`ordersync.ik.v1`) to the master whose static
    /// public key is `masterKey`: returns the link and its first message (`.send`).
    public static func knownInitiator(
        masterKey: [UInt8], localStatic: NoiseKeyPair, options: SecureLinkOptions = .init(),
        random: NoiseRandomSource = .system
    ) throws(SecureLinkError) -> (SecureLink, [Event]) {
        guard masterKey.count == 32 else {
            throw SecureLinkError(.unsupported, "a master key has 32 bytes, got \(masterKey.count)")
        }
        var handshake = try makeHandshake(
            knownProtocolName, role: .initiator, prologue: SecureLinkSubprotocol.known, localStatic: localStatic,
            remoteStatic: masterKey, random: random)
        let first = try write(&handshake, payload: [], "IK message 1")
        let link = SecureLink(
            state: .initiatorAwaitingResponse(handshake, finalPayload: nil), options: options, random: random)
        return (link, [.send(first)])
    }

    /// The most codes one pairing responder tries message 3 against (each try costs a DH and
    /// two decryptions).
    public static let maxPairingCodes = 16

    /// The master's end of a pairing: `payload` goes in message 2. A third message that fails
    /// (a wrong code) is `.authenticationFailed`.
    public static func pairingResponder(
        code: PairingCode, localStatic: NoiseKeyPair, payload: [UInt8], options: SecureLinkOptions = .init(),
        random: NoiseRandomSource = .system
    ) throws(SecureLinkError) -> SecureLink {
        try pairingResponder(codes: [code], localStatic: localStatic, payload: payload, options: options, random: random)
    }

    /// The master's end of a pairing with several open codes (1 to `maxPairingCodes`): messages 1
    /// and 2 do not depend on the code (XXpsk3 mixes the psk in only at message 3), so message 3
    /// is read with each code in turn, on a copy of the handshake state; the first that
    /// decrypts is the one used (`pairingCodeIndex`). None: `.authenticationFailed`, after the
    /// same steps whatever the codes were.
    public static func pairingResponder(
        codes: [PairingCode], localStatic: NoiseKeyPair, payload: [UInt8], options: SecureLinkOptions = .init(),
        random: NoiseRandomSource = .system
    ) throws(SecureLinkError) -> SecureLink {
        guard let first = codes.first, codes.count <= maxPairingCodes else {
            throw SecureLinkError(.unsupported, "a pairing responder takes 1 to \(maxPairingCodes) codes, got \(codes.count)")
        }
        let handshake = try makeHandshake(
            pairingProtocolName, role: .responder, prologue: SecureLinkSubprotocol.pairing, localStatic: localStatic,
            preSharedKeys: [first.preSharedKey], random: random)
        return SecureLink(
            state: .pairingAwaitingFirst(handshake, payload: payload, codes: codes.map(\.preSharedKey)), options: options,
            random: random)
    }

    /// The master's end of a known connection: reads message 1 with each of `keys` in order
    /// (current, then previous), presents the initiator's key and waits for `accept(payload:)`.
    public static func knownResponder(
        keys: [NoiseKeyPair], options: SecureLinkOptions = .init(), random: NoiseRandomSource = .system
    ) -> SecureLink {
        SecureLink(state: .knownAwaitingFirst(keys: keys), options: options, random: random)
    }

    /// IK responder, after `.peerKeyPresented`: writes message 2 with `payload` and establishes
    /// the link: `[.send(message2), .established(...)]`.
    public mutating func accept(payload: [UInt8]) throws(SecureLinkError) -> [Event] {
        guard case .knownAwaitingAcceptance(var handshake, let peerPayload) = state else {
            throw SecureLinkError(.wrongState, "accept(payload:) follows only a presented key")
        }
        state = .failed
        let second = try Self.write(&handshake, payload: payload, "IK message 2")
        return [.send(second)] + (try establish(handshake, peerPayload: peerPayload))
    }

    // MARK: Reading handshake messages

    mutating func initiatorRead(
        _ message: [UInt8], handshake: NoiseHandshakeState, finalPayload: [UInt8]?
    ) throws(SecureLinkError) -> [Event] {
        var handshake = handshake
        let peerPayload = try Self.read(&handshake, message, "handshake message 2")
        guard let finalPayload else {
            return try establish(handshake, peerPayload: peerPayload)
        }
        let third = try Self.write(&handshake, payload: finalPayload, "pairing message 3")
        return [.send(third)] + (try establish(handshake, peerPayload: peerPayload))
    }

    mutating func pairingReadFirst(
        _ message: [UInt8], handshake: NoiseHandshakeState, payload: [UInt8], codes: [[UInt8]]
    ) throws(SecureLinkError) -> [Event] {
        var handshake = handshake
        let firstPayload = try Self.read(&handshake, message, "pairing message 1")
        guard firstPayload.isEmpty else {
            throw SecureLinkError(.malformed, "pairing message 1 carries a payload of \(firstPayload.count) bytes")
        }
        let second = try Self.write(&handshake, payload: payload, "pairing message 2")
        state = .pairingAwaitingFinal(handshake, codes: codes)
        return [.send(second)]
    }

    /// Message 3, read with each code's psk on its own copy of the handshake: the first that
    /// decrypts establishes the link; every code is tried whatever the first ones gave.
    mutating func pairingReadFinal(_ message: [UInt8], handshake: NoiseHandshakeState, codes: [[UInt8]]) throws(SecureLinkError)
        -> [Event]
    {
        var found: (index: Int, handshake: NoiseHandshakeState, payload: [UInt8])?
        for (index, psk) in codes.enumerated() {
            var candidate: NoiseHandshakeState
            do {
                candidate = try handshake.replacingPreSharedKeys([psk])
            } catch {
                preconditionFailure("a pairing code's psk was refused: \(error)")
            }
            guard let peerPayload = try? Self.read(&candidate, message, "pairing message 3"), found == nil else { continue }
            found = (index, candidate, peerPayload)
        }
        guard let found else {
            throw SecureLinkError(.authenticationFailed, "pairing message 3 decrypts with none of the open codes (a wrong code?)")
        }
        pairingCodeIndex = found.index
        return try establish(found.handshake, peerPayload: found.payload)
    }

    mutating func knownReadFirst(_ message: [UInt8], keys: [NoiseKeyPair]) throws(SecureLinkError) -> [Event] {
        // e (32), s (32 + 16), the payload's tag (16).
        guard message.count >= 96, message.count <= 65535 else {
            throw SecureLinkError(.malformed, "IK message 1 has \(message.count) bytes, not 96 to 65535")
        }
        var lastError = SecureLinkError(.authenticationFailed, "the responder holds no key")
        for (index, key) in keys.enumerated() {
            var handshake = try Self.makeHandshake(
                Self.knownProtocolName, role: .responder, prologue: SecureLinkSubprotocol.known, localStatic: key,
                random: random)
            do throws(SecureLinkError) {
                let peerPayload = try Self.read(&handshake, message, "IK message 1 with key \(index)")
                guard let peerKey = handshake.remoteStaticKey else {
                    preconditionFailure("IK message 1 was read without the initiator's static key")
                }
                peerStaticKey = peerKey
                responderKeyIndex = index
                state = .knownAwaitingAcceptance(handshake, peerPayload: peerPayload)
                return [.peerKeyPresented(staticKey: peerKey)]
            } catch {
                lastError = error
            }
        }
        throw SecureLinkError(
            .authenticationFailed,
            "IK message 1 is for none of the \(keys.count) keys held (last: \(lastError.message))")
    }

    /// Takes the transport session of a finished handshake and establishes the link.
    mutating func establish(_ handshake: NoiseHandshakeState, peerPayload: [UInt8]) throws(SecureLinkError) -> [Event] {
        var handshake = handshake
        let session: NoiseTransportSession
        do {
            session = try handshake.takeTransportSession()
        } catch {
            preconditionFailure("a finished handshake had no transport session: \(error)")
        }
        guard let peerKey = session.remoteStaticKey else {
            preconditionFailure("XXpsk3 and IK always give the peer's static key")
        }
        peerStaticKey = peerKey
        handshakeHash = session.handshakeHash
        transport = SecureLinkTransport(session: session, options: options)
        state = .established
        return [.established(peerStaticKey: peerKey, peerPayload: peerPayload)]
    }

    // MARK: Noise calls with link errors

    static func makeHandshake(
        _ name: String, role: NoiseRole, prologue: String, localStatic: NoiseKeyPair, remoteStatic: [UInt8]? = nil,
        preSharedKeys: [[UInt8]] = [], random: NoiseRandomSource
    ) throws(SecureLinkError) -> NoiseHandshakeState {
        do {
            return try NoiseHandshakeState(
                protocol: NoiseProtocol(name: name), role: role, prologue: Array(prologue.utf8),
                localStaticKey: localStatic, remoteStaticKey: remoteStatic, preSharedKeys: preSharedKeys, random: random)
        } catch {
            throw SecureLinkError(.unsupported, "setting up \(name) failed: \(error.message)")
        }
    }

    static func write(_ handshake: inout NoiseHandshakeState, payload: [UInt8], _ what: String) throws(SecureLinkError)
        -> [UInt8]
    {
        do {
            return try handshake.writeMessage(payload: payload)
        } catch {
            throw SecureLinkError.handshake(error, "writing \(what)")
        }
    }

    static func read(_ handshake: inout NoiseHandshakeState, _ message: [UInt8], _ what: String) throws(SecureLinkError)
        -> [UInt8]
    {
        do {
            return try handshake.readMessage(message)
        } catch {
            throw SecureLinkError.handshake(error, what)
        }
    }
}
