extension NoiseHandshakeState {
    /// `WriteMessage(payload, message_buffer)`: the next handshake message, carrying `payload`
    /// (encrypted once the handshake has a key).
    public mutating func writeMessage(payload: [UInt8] = []) throws(NoiseError) -> [UInt8] {
        guard case .handshaking(var symmetric, let index, var nextPreSharedKey) = state, writer(ofMessage: index) == role else {
            throw NoiseError(.wrongState, "it is not this \(role)'s turn to write a handshake message")
        }
        state = .failed
        var message: [UInt8] = []
        for token in pattern.messages[index] {
            switch token {
            case .e:
                // "Sets e (which must be empty) to GENERATE_KEYPAIR(). Appends e.public_key to the
                // buffer. Calls MixHash(e.public_key)." In a PSK handshake, also MixKey (9.2).
                let ephemeral = localEphemeralKey ?? NoiseKeyPair.generate(using: random)
                localEphemeralKey = ephemeral
                message += ephemeral.publicKey
                symmetric.mixHash(ephemeral.publicKey)
                if pattern.usesPreSharedKeys { symmetric.mixKey(ephemeral.publicKey) }
            case .s:
                // "Appends EncryptAndHash(s.public_key) to the buffer."
                guard let localStaticKey else { throw Self.absent("local static") }
                message += try symmetric.encryptAndHash(localStaticKey.publicKey)
            case .psk:
                symmetric.mixKeyAndHash(preSharedKeys[nextPreSharedKey])
                nextPreSharedKey += 1
            case .ee, .es, .se, .ss:
                symmetric.mixKey(try dh(token))
            }
        }
        message += try symmetric.encryptAndHash(payload)
        guard message.count <= NoiseCrypto.maxMessageLength else {
            throw NoiseError(.messageTooLong, "a handshake message of \(message.count) bytes exceeds 65535")
        }
        finish(message: index, symmetric: symmetric, nextPreSharedKey: nextPreSharedKey)
        return message
    }

    /// `ReadMessage(message, payload_buffer)`: checks and absorbs the peer's next handshake
    /// message and returns its payload.
    public mutating func readMessage(_ message: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard case .handshaking(var symmetric, let index, var nextPreSharedKey) = state, writer(ofMessage: index) != role else {
            throw NoiseError(.wrongState, "this \(role) is not expecting a handshake message")
        }
        state = .failed
        guard message.count <= NoiseCrypto.maxMessageLength else {
            throw NoiseError(.messageTooLong, "a handshake message of \(message.count) bytes exceeds 65535")
        }
        var offset = 0
        func take(_ count: Int, _ what: String) throws(NoiseError) -> [UInt8] {
            guard message.count - offset >= count else {
                throw NoiseError(.badMessageLength, "handshake message \(index) of \(message.count) bytes ends before its \(what)")
            }
            defer { offset += count }
            return Array(message[offset..<(offset + count)])
        }
        for token in pattern.messages[index] {
            switch token {
            case .e:
                // "Sets re (which must be empty) to the next DHLEN bytes from the message. Calls
                // MixHash(re.public_key)." In a PSK handshake, also MixKey (9.2).
                let ephemeral = try take(NoiseCrypto.dhLength, "ephemeral key")
                remoteEphemeralKey = ephemeral
                symmetric.mixHash(ephemeral)
                if pattern.usesPreSharedKeys { symmetric.mixKey(ephemeral) }
            case .s:
                // "Sets temp to the next DHLEN + 16 bytes of the message if HasKey() == True, or to
                // the next DHLEN bytes otherwise. Sets rs (which must be empty) to
                // DecryptAndHash(temp)."
                let length = NoiseCrypto.dhLength + (symmetric.hasKey ? NoiseCrypto.tagLength : 0)
                remoteStaticKey = try symmetric.decryptAndHash(take(length, "static key"))
            case .psk:
                symmetric.mixKeyAndHash(preSharedKeys[nextPreSharedKey])
                nextPreSharedKey += 1
            case .ee, .es, .se, .ss:
                symmetric.mixKey(try dh(token))
            }
        }
        // "Calls DecryptAndHash() on the remaining bytes of the message and stores the output into
        // payload_buffer."
        let payload = try symmetric.decryptAndHash(Array(message[offset...]))
        finish(message: index, symmetric: symmetric, nextPreSharedKey: nextPreSharedKey)
        return payload
    }

    /// The DH of a token, from this party's point of view (5.3): for `es` the initiator uses
    /// `DH(e, rs)` and the responder `DH(s, re)`; `se` the other way round.
    private func dh(_ token: NoiseHandshakePattern.Token) throws(NoiseError) -> [UInt8] {
        let initiator = role == .initiator
        let (localIsEphemeral, remoteIsEphemeral): (Bool, Bool)
        switch token {
        case .ee: (localIsEphemeral, remoteIsEphemeral) = (true, true)
        case .es: (localIsEphemeral, remoteIsEphemeral) = initiator ? (true, false) : (false, true)
        case .se: (localIsEphemeral, remoteIsEphemeral) = initiator ? (false, true) : (true, false)
        case .ss: (localIsEphemeral, remoteIsEphemeral) = (false, false)
        case .e, .s, .psk: preconditionFailure("\(token) is not a DH token")
        }
        guard let local = localIsEphemeral ? localEphemeralKey : localStaticKey else {
            throw Self.absent(localIsEphemeral ? "local ephemeral" : "local static")
        }
        guard let remote = remoteIsEphemeral ? remoteEphemeralKey : remoteStaticKey else {
            throw Self.absent(remoteIsEphemeral ? "remote ephemeral" : "remote static")
        }
        return try NoiseCrypto.dh(privateKey: local.privateKey, publicKey: remote)
    }

    /// Moves to the next message, or, after the last, `Split()`s into the transport session.
    private mutating func finish(message index: Int, symmetric: NoiseSymmetricState, nextPreSharedKey: Int) {
        guard index + 1 == pattern.messages.count else {
            state = .handshaking(symmetric, nextMessage: index + 1, nextPreSharedKey: nextPreSharedKey)
            return
        }
        let (initiatorToResponder, responderToInitiator) = symmetric.split()
        // 5.3 / 7.4: for one-way patterns "the second CipherState returned by Split() will be
        // discarded": only the initiator sends.
        let session: NoiseTransportSession
        switch (role, pattern.isOneWay) {
        case (.initiator, false):
            session = NoiseTransportSession(
                sending: initiatorToResponder, receiving: responderToInitiator,
                handshakeHash: symmetric.handshakeHash, remoteStaticKey: remoteStaticKey)
        case (.responder, false):
            session = NoiseTransportSession(
                sending: responderToInitiator, receiving: initiatorToResponder,
                handshakeHash: symmetric.handshakeHash, remoteStaticKey: remoteStaticKey)
        case (.initiator, true):
            session = NoiseTransportSession(
                sending: initiatorToResponder, receiving: nil,
                handshakeHash: symmetric.handshakeHash, remoteStaticKey: remoteStaticKey)
        case (.responder, true):
            session = NoiseTransportSession(
                sending: nil, receiving: initiatorToResponder,
                handshakeHash: symmetric.handshakeHash, remoteStaticKey: remoteStaticKey)
        }
        state = .complete(session)
    }

    private static func absent(_ what: String) -> NoiseError {
        NoiseError(.missingKey, "the handshake reached a token needing the \(what) key before it was known")
    }
}
