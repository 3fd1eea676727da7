import CryptoPrimitives
import XCTest

@testable import Noise

final class NoisePrimitiveTests: XCTestCase {
    func testNonceIsFourZeroBytesThenLittleEndianCounter() {
        XCTAssertEqual(NoiseCrypto.nonceBytes(0), [UInt8](repeating: 0, count: 12))
        XCTAssertEqual(NoiseCrypto.nonceBytes(0x0102_0304_0506_0708), [0, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1])
    }

    /// Noise's HKDF with two or three outputs is RFC 5869 HKDF with the chaining key as salt and
    /// an empty info: compare with CryptoPrimitives' RFC 5869 HKDF (checked against the RFC's
    /// vectors in CryptoPrimitivesTests), computed another way (extract, then expand with info).
    func testHKDFMatchesRFC5869() {
        let chainingKey = (0..<32).map { UInt8($0) }
        for inputLength in [0, 32, 77] {
            let input = (0..<inputLength).map { UInt8(truncatingIfNeeded: $0 * 7 + 1) }
            let outputs = NoiseCrypto.hkdf(chainingKey: chainingKey, inputKeyMaterial: input, outputs: 3)
            let reference = Digest.hkdfSHA256(inputKeyMaterial: input, salt: chainingKey, info: [], outputByteCount: 96)
            XCTAssertEqual(outputs.reduce([], +), reference)
            XCTAssertEqual(
                NoiseCrypto.hkdf(chainingKey: chainingKey, inputKeyMaterial: input, outputs: 2),
                Array(outputs.prefix(2)))
        }
    }

    func testCipherStateWithoutKeyPassesThrough() throws {
        var cipher = NoiseCipherState(key: nil)
        XCTAssertEqual(try cipher.encrypt(withAd: [1], plaintext: [1, 2, 3]), [1, 2, 3])
        XCTAssertEqual(try cipher.decrypt(withAd: [1], ciphertext: [1, 2, 3]), [1, 2, 3])
        XCTAssertEqual(cipher.nonce, 0)
    }

    func testCipherStateFailedDecryptKeepsNonce() throws {
        let key = [UInt8](repeating: 9, count: 32)
        var sender = NoiseCipherState(key: key)
        var receiver = NoiseCipherState(key: key)
        var message = try sender.encrypt(withAd: [0xAA], plaintext: [1, 2, 3])
        XCTAssertEqual(message.count, 3 + 16)
        XCTAssertNoiseError(.decryptFailed, try receiver.decrypt(withAd: [0xAB], ciphertext: message))
        XCTAssertEqual(receiver.nonce, 0)
        message[0] ^= 1
        XCTAssertNoiseError(.decryptFailed, try receiver.decrypt(withAd: [0xAA], ciphertext: message))
        message[0] ^= 1
        XCTAssertEqual(try receiver.decrypt(withAd: [0xAA], ciphertext: message), [1, 2, 3])
        XCTAssertEqual(receiver.nonce, 1)
        XCTAssertNoiseError(.badMessageLength, try receiver.decrypt(withAd: [], ciphertext: [UInt8](repeating: 0, count: 15)))
    }

    func testNonceTwoToTheSixtyFourMinusOneIsReserved() throws {
        var cipher = NoiseCipherState(key: [UInt8](repeating: 1, count: 32))
        cipher.setNonce(UInt64.max - 1)
        XCTAssertNoThrow(try cipher.encrypt(withAd: [], plaintext: [0]))
        XCTAssertEqual(cipher.nonce, UInt64.max)
        XCTAssertNoiseError(.nonceExhausted, try cipher.encrypt(withAd: [], plaintext: [0]))
        XCTAssertNoiseError(.nonceExhausted, try cipher.decrypt(withAd: [], ciphertext: [UInt8](repeating: 0, count: 16)))
    }

    /// REKEY(k) = the first 32 bytes of ENCRYPT(k, 2^64-1, empty, 32 zero bytes); the counter
    /// is unchanged.
    func testRekeyFollowsSection4_2() throws {
        let key = (0..<32).map { UInt8($0 + 100) }
        var cipher = NoiseCipherState(key: key)
        _ = try cipher.encrypt(withAd: [], plaintext: [])
        cipher.rekey()
        XCTAssertEqual(cipher.nonce, 1)
        let newKey = Array(
            NoiseCrypto.encrypt(key: NoiseChaChaPoly(key: key), nonce: UInt64.max, ad: [], plaintext: [UInt8](repeating: 0, count: 32))
                .prefix(32))
        var expected = NoiseCipherState(key: newKey)
        expected.setNonce(1)
        XCTAssertEqual(try cipher.encrypt(withAd: [], plaintext: [5]), try expected.encrypt(withAd: [], plaintext: [5]))
    }

    func testLongProtocolNameIsHashedShortOnePadded() {
        let short = NoiseSymmetricState(protocolName: "Noise_NN_25519_ChaChaPoly_SHA256")
        XCTAssertEqual(short.handshakeHash, Array("Noise_NN_25519_ChaChaPoly_SHA256".utf8))
        let padded = NoiseSymmetricState(protocolName: "abc")
        XCTAssertEqual(padded.handshakeHash, Array("abc".utf8) + [UInt8](repeating: 0, count: 29))
        let long = NoiseSymmetricState(protocolName: "Noise_XXpsk3_25519_ChaChaPoly_SHA256")
        // SHA-256 of the name, computed with Python's hashlib.
        XCTAssertEqual(long.handshakeHash, Hex.bytes("d4163f913dcc89f7801c4345e2ef79367b58f64cfc64090982a334eedc9a3bd9"))
    }

    func testKeyPairChecksLengthAndDerivesPublicKey() throws {
        XCTAssertNoiseError(.invalidKey, try NoiseKeyPair(privateKey: [1, 2, 3]))
        let pair = NoiseKeyPair.generate()
        XCTAssertEqual(try NoiseKeyPair(privateKey: pair.privateKey), pair)
        XCTAssertNotEqual(NoiseKeyPair.generate(), pair)
    }
}
