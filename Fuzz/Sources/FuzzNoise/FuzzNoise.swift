import Noise

// Feeds arbitrary bytes to the Noise handshake and transport, as a peer on the LAN could, and
// checks what must hold whatever arrives:
//
// - nothing traps (every problem is a `NoiseError`);
// - a failed handshake stays failed: it refuses the next message with `.wrongState` and never
//   completes;
// - a handshake message that was accepted lets the responder go on writing (or fail only with
//   `.invalidKey`, for a low-order ephemeral key);
// - a transport session counts accepted messages in its nonce, and after the first failure
//   refuses everything with `.wrongState`;
// - a message that is not exactly what the honest peer sent is refused.
//
// The first input byte picks a scenario; the rest is the message, or edits to an honest one.
// Keys are fixed so a run is reproducible.

/// libFuzzer's entry point.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    guard let selector = input.first else { return 0 }
    let rest = Array(input.dropFirst())
    switch selector % 8 {
    case 0: readFirstMessage(rest, protocolName: "Noise_XX_25519_ChaChaPoly_SHA256")
    case 1: readFirstMessage(rest, protocolName: "Noise_IK_25519_ChaChaPoly_SHA256")
    case 2: readFirstMessage(rest, protocolName: "Noise_XXpsk3_25519_ChaChaPoly_SHA256")
    case 3: readSecondMessage(rest, protocolName: "Noise_XX_25519_ChaChaPoly_SHA256")
    case 4: readSecondMessage(rest, protocolName: "Noise_IK_25519_ChaChaPoly_SHA256")
    case 5: readEditedHandshake(rest)
    case 6: decryptTransport(rest)
    default: decryptEditedTransport(rest)
    }
    return 0
}

/// Traps with `message` (libFuzzer records the input as a crash) unless `condition` holds.
private func require(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
    if !condition() {
        fatalError("fuzz invariant violated: \(message())")
    }
}

private func key(_ byte: UInt8) -> NoiseKeyPair {
    do throws(NoiseError) {
        return try NoiseKeyPair(privateKey: [UInt8](repeating: byte, count: 32))
    } catch {
        fatalError("a 32-byte key was refused: \(error)")
    }
}

private let initiatorStatic = key(0x11)
private let responderStatic = key(0x22)
private let initiatorEphemeral = key(0x33)
private let responderEphemeral = key(0x44)
private let preSharedKey = [UInt8](repeating: 0x55, count: 32)

/// A handshake for `role` with the fixed keys the pattern needs.
private func handshake(_ protocolName: String, _ role: NoiseRole) -> NoiseHandshakeState {
    do throws(NoiseError) {
        let noiseProtocol = try NoiseProtocol(name: protocolName)
        let pattern = noiseProtocol.pattern
        let initiator = role == .initiator
        let remotePreMessage = initiator ? pattern.responderPreMessage : pattern.initiatorPreMessage
        let ownPreMessage = initiator ? pattern.initiatorPreMessage : pattern.responderPreMessage
        let ownMessages = pattern.messages.indices.filter { ($0 % 2 == 0) == initiator }.map { pattern.messages[$0] }
        let sendsStatic = ownPreMessage.contains(.s) || ownMessages.contains { $0.contains(.s) }
        return try NoiseHandshakeState(
            protocol: noiseProtocol, role: role, prologue: Array("fuzz".utf8),
            localStaticKey: sendsStatic ? (initiator ? initiatorStatic : responderStatic) : nil,
            remoteStaticKey: remotePreMessage.contains(.s) ? (initiator ? responderStatic : initiatorStatic).publicKey : nil,
            preSharedKeys: Array(repeating: preSharedKey, count: pattern.preSharedKeyCount),
            localEphemeralKey: initiator ? initiatorEphemeral : responderEphemeral)
    } catch {
        fatalError("setting up \(protocolName) failed: \(error)")
    }
}

/// Checks that a handshake that just refused a message is failed for good.
private func requireFailed(_ state: inout NoiseHandshakeState, _ error: NoiseError, _ what: String) {
    require(!state.isComplete, "\(what): a refused handshake reports complete")
    require(state.handshakeHash == nil, "\(what): a refused handshake still has a hash")
    do throws(NoiseError) {
        _ = try state.readMessage([])
        require(false, "\(what): a refused handshake accepted another message after \(error)")
    } catch {
        require(error.code == .wrongState, "\(what): a refused handshake answered \(error), not wrongState")
    }
}

/// A responder reads `message` as the first handshake message, then writes its answer.
private func readFirstMessage(_ message: [UInt8], protocolName: String) {
    var responder = handshake(protocolName, .responder)
    do throws(NoiseError) {
        _ = try responder.readMessage(message)
    } catch {
        requireFailed(&responder, error, "\(protocolName) message 1")
        return
    }
    do throws(NoiseError) {
        _ = try responder.writeMessage(payload: [1, 2, 3])
    } catch {
        require(error.code == .invalidKey, "\(protocolName): writing after an accepted message 1 failed with \(error)")
    }
}

/// An initiator writes its first message, then reads `message` as the answer.
private func readSecondMessage(_ message: [UInt8], protocolName: String) {
    var initiator = handshake(protocolName, .initiator)
    do throws(NoiseError) {
        _ = try initiator.writeMessage()
        _ = try initiator.readMessage(message)
    } catch {
        requireFailed(&initiator, error, "\(protocolName) message 2")
        return
    }
    // Only the honest responder's keys can produce an acceptable IK message 2.
    require(!protocolName.contains("IK") || initiator.isComplete, "IK accepted message 2 without completing")
}

/// Applies `edits` to `message`: pairs of (position, XOR mask); a final odd byte truncates or
/// extends.
private func edit(_ message: [UInt8], with edits: [UInt8]) -> [UInt8] {
    var edited = message
    var index = 0
    while index + 1 < edits.count, !edited.isEmpty {
        edited[Int(edits[index]) % edited.count] ^= edits[index + 1]
        index += 2
    }
    if edits.count % 2 == 1 {
        let amount = Int(edits[edits.count - 1])
        if amount < 128 {
            edited.removeLast(min(amount, edited.count))
        } else {
            edited += [UInt8](repeating: UInt8(truncatingIfNeeded: amount), count: amount - 127)
        }
    }
    return edited
}

/// An honest XXpsk3 handshake in which the third message is edited on the way: the responder
/// accepts it exactly when it is unchanged.
private func readEditedHandshake(_ edits: [UInt8]) {
    let protocolName = "Noise_XXpsk3_25519_ChaChaPoly_SHA256"
    var initiator = handshake(protocolName, .initiator)
    var responder = handshake(protocolName, .responder)
    let third: [UInt8]
    do throws(NoiseError) {
        _ = try responder.readMessage(initiator.writeMessage(payload: [9]))
        _ = try initiator.readMessage(responder.writeMessage(payload: [8]))
        third = try initiator.writeMessage(payload: [7, 7])
    } catch {
        fatalError("the honest XXpsk3 handshake failed: \(error)")
    }
    let edited = edit(third, with: edits)
    do throws(NoiseError) {
        let payload = try responder.readMessage(edited)
        require(edited == third, "an edited XXpsk3 message 3 was accepted")
        require(payload == [7, 7] && responder.isComplete, "the honest message 3 gave \(payload)")
    } catch {
        require(edited != third, "the honest XXpsk3 message 3 was refused: \(error)")
        requireFailed(&responder, error, "XXpsk3 message 3")
    }
}

/// Transport sessions from an honest NN handshake with fixed keys.
private func transportPair() -> (NoiseTransportSession, NoiseTransportSession) {
    let protocolName = "Noise_NN_25519_ChaChaPoly_SHA256"
    var initiator = handshake(protocolName, .initiator)
    var responder = handshake(protocolName, .responder)
    do throws(NoiseError) {
        _ = try responder.readMessage(initiator.writeMessage())
        _ = try initiator.readMessage(responder.writeMessage())
        return (try initiator.takeTransportSession(), try responder.takeTransportSession())
    } catch {
        fatalError("the honest NN handshake failed: \(error)")
    }
}

/// Splits `input` into messages, each prefixed by a two-byte big-endian length, and decrypts
/// them in order.
private func decryptTransport(_ input: [UInt8]) {
    var (_, responder) = transportPair()
    var offset = 0
    var accepted: UInt64 = 0
    while offset + 2 <= input.count {
        let length = Int(input[offset]) << 8 | Int(input[offset + 1])
        let message = Array(input[(offset + 2)..<min(input.count, offset + 2 + length)])
        offset += 2 + length
        let wasBroken = responder.isBroken
        do throws(NoiseError) {
            _ = try responder.decrypt(message)
            require(!wasBroken, "a broken session decrypted a message")
            accepted += 1
            require(responder.receivingNonce == accepted, "the receiving nonce does not count accepted messages")
        } catch {
            require(responder.isBroken, "a refused message left the session open (\(error))")
            require(!wasBroken || error.code == .wrongState, "a broken session answered \(error)")
        }
    }
}

/// Three honest transport messages, the second edited on the way: the session accepts the rest
/// exactly when the edit changed nothing.
private func decryptEditedTransport(_ edits: [UInt8]) {
    var (initiator, responder) = transportPair()
    var messages: [[UInt8]] = []
    do throws(NoiseError) {
        for plaintext: [UInt8] in [[1], [2, 2], [3, 3, 3]] {
            messages.append(try initiator.encrypt(plaintext))
        }
    } catch {
        fatalError("encrypting failed: \(error)")
    }
    let edited = edit(messages[1], with: edits)
    do throws(NoiseError) {
        let first = try responder.decrypt(messages[0])
        require(first == [1], "the honest first message changed")
    } catch {
        fatalError("the honest first message was refused: \(error)")
    }
    do throws(NoiseError) {
        _ = try responder.decrypt(edited)
        require(edited == messages[1], "an edited transport message was accepted")
        let third = try responder.decrypt(messages[2])
        require(third == [3, 3, 3], "the honest third message changed")
    } catch {
        require(edited != messages[1], "an honest transport message was refused: \(error)")
        require(responder.isBroken, "a refused transport message left the session open")
    }
}
