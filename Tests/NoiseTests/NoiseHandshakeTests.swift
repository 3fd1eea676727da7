import XCTest

@testable import Noise

final class NoiseHandshakeTests: XCTestCase {
    func testPskModifiersPlaceTokens() throws {
        XCTAssertEqual(try NoiseHandshakePattern.named("XXpsk3").messages, [[.e], [.e, .ee, .s, .es], [.s, .se, .psk]])
        XCTAssertEqual(try NoiseHandshakePattern.named("NNpsk0").messages, [[.psk, .e], [.e, .ee]])
        XCTAssertEqual(try NoiseHandshakePattern.named("IKpsk2").messages, [[.e, .es, .s, .ss], [.e, .ee, .se, .psk]])
        XCTAssertEqual(try NoiseHandshakePattern.named("NNpsk0+psk2").messages, [[.psk, .e], [.e, .ee, .psk]])
        XCTAssertEqual(try NoiseHandshakePattern.named("KKpsk0").responderPreMessage, [.s])
        XCTAssertEqual(try NoiseHandshakePattern.named("NNpsk0+psk2").preSharedKeyCount, 2)
    }

    func testRefusesUnknownPatternsModifiersAndSuites() {
        for name in ["QQ", "XXpsk4", "XXpsk", "XXpskx", "XXpsk1+psk1", "XXpsk01", "XXpsk3+", "psk0", "XXfallback"] {
            XCTAssertNoiseError(.unsupportedProtocol, try NoiseHandshakePattern.named(name), "\(name)")
        }
        for name in [
            "Noise_XX_25519_AESGCM_SHA256", "Noise_XX_448_ChaChaPoly_SHA256", "Noise__25519_ChaChaPoly_SHA256",
            "XX_25519_ChaChaPoly_SHA256", "Noise_XX_25519_ChaChaPoly_SHA256 ",
        ] {
            XCTAssertNoiseError(.unsupportedProtocol, try NoiseProtocol(name: name), "\(name)")
        }
    }

    func testKeysMustMatchThePattern() throws {
        let ik = try NoiseProtocol(name: "Noise_IK_25519_ChaChaPoly_SHA256")
        let keys = NoiseKeyPair.generate()
        XCTAssertNoiseError(.missingKey, try NoiseHandshakeState(protocol: ik, role: .initiator, localStaticKey: keys))
        XCTAssertNoiseError(.missingKey, try NoiseHandshakeState(protocol: ik, role: .initiator, remoteStaticKey: keys.publicKey))
        XCTAssertNoiseError(
            .invalidKey,
            try NoiseHandshakeState(
                protocol: ik, role: .initiator, localStaticKey: keys,
                remoteStaticKey: [1, 2]))
        XCTAssertNoiseError(
            .missingKey,
            try NoiseHandshakeState(
                protocol: ik, role: .responder, localStaticKey: keys,
                remoteStaticKey: keys.publicKey))
        let nn = try NoiseProtocol(name: "Noise_NN_25519_ChaChaPoly_SHA256")
        XCTAssertNoiseError(.missingKey, try NoiseHandshakeState(protocol: nn, role: .initiator, localStaticKey: keys))
        let xxpsk3 = try NoiseProtocol(name: "Noise_XXpsk3_25519_ChaChaPoly_SHA256")
        XCTAssertNoiseError(.missingKey, try NoiseHandshakeState(protocol: xxpsk3, role: .initiator, localStaticKey: keys))
        XCTAssertNoiseError(
            .invalidKey,
            try NoiseHandshakeState(
                protocol: xxpsk3, role: .initiator, localStaticKey: keys,
                preSharedKeys: [[1]]))
    }

    func testEveryPatternCompletesBothWaysAndAgrees() throws {
        let names =
            NoiseHandshakePattern.baseTable.keys.sorted()
            + ["XXpsk3", "IKpsk2", "NNpsk0", "KKpsk0", "NNpsk0+psk2", "IXpsk2", "Npsk0", "Xpsk1"]
        XCTAssertEqual(NoiseHandshakePattern.baseTable.count, 38)
        for name in names {
            var pair = try NoisePair("Noise_\(name)_25519_ChaChaPoly_SHA256")
            var (initiator, responder) = try pair.handshake()
            XCTAssertEqual(initiator.handshakeHash, responder.handshakeHash, name)
            if pair.responder.pattern.initiatorNeedsStatic {
                XCTAssertEqual(responder.remoteStaticKey, pair.initiatorStatic.publicKey, name)
            }
            if pair.initiator.pattern.responderNeedsStatic {
                XCTAssertEqual(initiator.remoteStaticKey, pair.responderStatic.publicKey, name)
            }
            XCTAssertEqual(try responder.decrypt(initiator.encrypt([1, 2, 3])), [1, 2, 3], name)
            if pair.initiator.pattern.isOneWay {
                XCTAssertNoiseError(.wrongState, try responder.encrypt([1]), name)
                XCTAssertNoiseError(.wrongState, try initiator.decrypt([UInt8](repeating: 0, count: 16)), name)
            } else {
                XCTAssertEqual(try initiator.decrypt(responder.encrypt([4, 5])), [4, 5], name)
            }
        }
    }

    func testWrongTurnAndReuseAreWrongState() throws {
        var pair = try NoisePair("Noise_XX_25519_ChaChaPoly_SHA256")
        XCTAssertTrue(pair.initiator.isMyTurnToWrite)
        XCTAssertFalse(pair.responder.isMyTurnToWrite)
        XCTAssertNoiseError(.wrongState, try pair.responder.writeMessage())
        XCTAssertNoiseError(.wrongState, try pair.initiator.readMessage([UInt8](repeating: 1, count: 32)))
        XCTAssertNoiseError(.wrongState, try pair.initiator.takeTransportSession())
        _ = try pair.handshake()
        XCTAssertNoiseError(.wrongState, try pair.initiator.takeTransportSession())
        XCTAssertNoiseError(.wrongState, try pair.initiator.writeMessage())
        XCTAssertNoiseError(.wrongState, try pair.responder.readMessage([]))
    }

    func testTruncatedFlippedOrOversizedMessagesFailTheHandshake() throws {
        let cases: [(String, ([UInt8]) -> [UInt8], NoiseError.Code)] = [
            ("empty", { _ in [] }, .badMessageLength),
            ("cut inside e", { Array($0.prefix(31)) }, .badMessageLength),
            ("cut inside s", { Array($0.prefix(32 + 47)) }, .badMessageLength),
            ("cut inside the payload tag", { Array($0.prefix(32 + 48 + 15)) }, .badMessageLength),
            ("one byte appended", { $0 + [0] }, .decryptFailed),
            (
                "s flipped",
                {
                    var m = $0; m[40] ^= 0x80; return m
                }, .decryptFailed
            ),
        ]
        for (what, transform, code) in cases {
            var pair = try NoisePair("Noise_XX_25519_ChaChaPoly_SHA256")
            _ = try pair.responder.readMessage(pair.initiator.writeMessage())
            let second = try pair.responder.writeMessage()
            XCTAssertEqual(second.count, 32 + 48 + 16)
            XCTAssertNoiseError(code, try pair.initiator.readMessage(transform(second)), what)
            XCTAssertNoiseError(.wrongState, try pair.initiator.readMessage(second), "a failed handshake stays failed")
            XCTAssertNil(pair.initiator.handshakeHash)
        }
        for bit in [0, 8 * 40, 8 * 95 + 7] {
            var pair = try NoisePair("Noise_IK_25519_ChaChaPoly_SHA256")
            var first = try pair.initiator.writeMessage(payload: [1, 2, 3])
            first[bit / 8] ^= UInt8(1 << (bit % 8))
            XCTAssertNoiseError(.decryptFailed, try pair.responder.readMessage(first), "bit \(bit)")
        }
        var pair = try NoisePair("Noise_NN_25519_ChaChaPoly_SHA256")
        XCTAssertNoiseError(.messageTooLong, try pair.responder.readMessage([UInt8](repeating: 0, count: 65536)))
        XCTAssertNoiseError(.messageTooLong, try pair.initiator.writeMessage(payload: [UInt8](repeating: 0, count: 65535 - 31)))
        var fits = try NoisePair("Noise_NN_25519_ChaChaPoly_SHA256")
        XCTAssertEqual(try fits.initiator.writeMessage(payload: [UInt8](repeating: 0, count: 65535 - 32)).count, 65535)
    }

    func testWrongPreSharedKeyOrStaticKeyIsRefused() throws {
        var pair = try NoisePair("Noise_XXpsk3_25519_ChaChaPoly_SHA256")
        var other = try NoisePair("Noise_XXpsk3_25519_ChaChaPoly_SHA256", psk: [UInt8](repeating: 8, count: 32))
        _ = try other.responder.readMessage(pair.initiator.writeMessage())
        _ = try pair.initiator.readMessage(other.responder.writeMessage())
        XCTAssertNoiseError(.decryptFailed, try other.responder.readMessage(pair.initiator.writeMessage()))

        // IK toward a key that is not the responder's: the responder cannot read the first message.
        let ik = try NoiseProtocol(name: "Noise_IK_25519_ChaChaPoly_SHA256")
        var initiator = try NoiseHandshakeState(
            protocol: ik, role: .initiator, localStaticKey: .generate(),
            remoteStaticKey: NoiseKeyPair.generate().publicKey)
        var responder = try NoiseHandshakeState(protocol: ik, role: .responder, localStaticKey: .generate())
        XCTAssertNoiseError(.decryptFailed, try responder.readMessage(initiator.writeMessage()))
    }

    func testLowOrderEphemeralKeyIsAnErrorNotATrap() throws {
        var pair = try NoisePair("Noise_NN_25519_ChaChaPoly_SHA256")
        XCTAssertEqual(try pair.responder.readMessage([UInt8](repeating: 0, count: 32)), [])
        XCTAssertNoiseError(.invalidKey, try pair.responder.writeMessage())
    }

    func testInjectedRandomSourceMakesEphemeralKeysReproducible() throws {
        let fixed = NoiseRandomSource { count in [UInt8](repeating: 0x42, count: count) }
        let nn = try NoiseProtocol(name: "Noise_NN_25519_ChaChaPoly_SHA256")
        var first = try NoiseHandshakeState(protocol: nn, role: .initiator, random: fixed)
        var second = try NoiseHandshakeState(protocol: nn, role: .initiator, random: fixed)
        let message = try first.writeMessage()
        XCTAssertEqual(message, try second.writeMessage())
        XCTAssertEqual(Array(message.prefix(32)), try NoiseKeyPair(privateKey: [UInt8](repeating: 0x42, count: 32)).publicKey)
        var system = try NoiseHandshakeState(protocol: nn, role: .initiator)
        XCTAssertNotEqual(try system.writeMessage(), message)
    }

    func testPrologueMismatchIsDetected() throws {
        let nn = try NoiseProtocol(name: "Noise_NN_25519_ChaChaPoly_SHA256")
        var initiator = try NoiseHandshakeState(protocol: nn, role: .initiator, prologue: [1])
        var responder = try NoiseHandshakeState(protocol: nn, role: .responder, prologue: [2])
        _ = try responder.readMessage(initiator.writeMessage())
        XCTAssertNoiseError(.decryptFailed, try initiator.readMessage(responder.writeMessage()))
    }
}
