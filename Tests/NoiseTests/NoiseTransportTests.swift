import XCTest

@testable import Noise

final class NoiseTransportTests: XCTestCase {
    private func sessions(_ name: String = "Noise_XX_25519_ChaChaPoly_SHA256") throws
        -> (initiator: NoiseTransportSession, responder: NoiseTransportSession)
    {
        var pair = try NoisePair(name)
        return try pair.handshake()
    }

    func testMessagesBothWaysWithCountersAsNonces() throws {
        var (initiator, responder) = try sessions()
        for round in 0..<5 {
            let forth = Array("to responder \(round)".utf8)
            let back = Array("to initiator \(round)".utf8)
            XCTAssertEqual(try responder.decrypt(initiator.encrypt(forth)), forth)
            XCTAssertEqual(try initiator.decrypt(responder.encrypt(back)), back)
        }
        XCTAssertEqual(initiator.sendingNonce, 5)
        XCTAssertEqual(responder.receivingNonce, 5)
        let same = try initiator.encrypt([1])
        XCTAssertNotEqual(same, try initiator.encrypt([1]), "the same plaintext twice gives two ciphertexts")
    }

    func testBitFlipFailsAndBreaksTheSession() throws {
        var (initiator, responder) = try sessions()
        var message = try initiator.encrypt(Array("pay 10".utf8))
        message[2] ^= 0x04
        XCTAssertNoiseError(.decryptFailed, try responder.decrypt(message))
        XCTAssertTrue(responder.isBroken)
        message[2] ^= 0x04
        XCTAssertNoiseError(.wrongState, try responder.decrypt(message), "nothing is accepted after a failure")
        XCTAssertNoiseError(.wrongState, try responder.encrypt([1]))
    }

    func testReplayFails() throws {
        var (initiator, responder) = try sessions()
        let message = try initiator.encrypt([1, 2, 3])
        XCTAssertEqual(try responder.decrypt(message), [1, 2, 3])
        XCTAssertNoiseError(.decryptFailed, try responder.decrypt(message))
        XCTAssertTrue(responder.isBroken)
    }

    func testReorderAndDropFail() throws {
        var (initiator, responder) = try sessions()
        let first = try initiator.encrypt([1])
        let second = try initiator.encrypt([2])
        var reordering = responder
        XCTAssertNoiseError(.decryptFailed, try reordering.decrypt(second), "second before first")
        XCTAssertEqual(try responder.decrypt(first), [1])
        XCTAssertEqual(try responder.decrypt(second), [2])

        _ = try initiator.encrypt([3]) // dropped on the way
        XCTAssertNoiseError(.decryptFailed, try responder.decrypt(initiator.encrypt([4])))
    }

    func testReflectedMessageFails() throws {
        var (initiator, responder) = try sessions()
        let message = try initiator.encrypt([1])
        XCTAssertNoiseError(.decryptFailed, try initiator.decrypt(message), "a message sent back to its sender")
        XCTAssertEqual(try responder.decrypt(message), [1])
    }

    func testRekeyOnBothSidesKeepsWorkingOneSidedRekeyFails() throws {
        var (initiator, responder) = try sessions("Noise_IK_25519_ChaChaPoly_SHA256")
        XCTAssertEqual(try responder.decrypt(initiator.encrypt([1])), [1])
        try initiator.rekeySending()
        try responder.rekeyReceiving()
        XCTAssertEqual(try responder.decrypt(initiator.encrypt([2])), [2])
        XCTAssertEqual(initiator.sendingNonce, 2, "rekeying leaves the counter")
        try responder.rekeySending()
        XCTAssertNoiseError(.decryptFailed, try initiator.decrypt(responder.encrypt([3])), "the receiver did not rekey")
    }

    func testLengthLimits() throws {
        var (initiator, responder) = try sessions()
        let largest = [UInt8](repeating: 0xA5, count: NoiseTransportSession.maxPlaintextLength)
        let message = try initiator.encrypt(largest)
        XCTAssertEqual(message.count, 65535)
        XCTAssertEqual(try responder.decrypt(message), largest)
        XCTAssertNoiseError(.messageTooLong, try initiator.encrypt(largest + [0]))
        XCTAssertFalse(initiator.isBroken, "refusing an oversized plaintext leaves the session usable")
        XCTAssertEqual(try responder.decrypt(initiator.encrypt([9])), [9])
        XCTAssertNoiseError(.badMessageLength, try responder.decrypt([UInt8](repeating: 0, count: 15)))
        var other = try sessions().responder
        XCTAssertNoiseError(.messageTooLong, try other.decrypt([UInt8](repeating: 0, count: 65536)))
    }

    func testEmptyPlaintextIsJustATag() throws {
        var (initiator, responder) = try sessions()
        let message = try initiator.encrypt([])
        XCTAssertEqual(message.count, 16)
        XCTAssertEqual(try responder.decrypt(message), [])
    }
}
