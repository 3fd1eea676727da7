import XCTest

@testable import CryptoPrimitives

/// X25519 against RFC 7748 (5.2 and its iterations, 6.1), and the refusals.
final class X25519Tests: XCTestCase {
    private func shared(_ scalar: [UInt8], _ u: [UInt8]) throws -> [UInt8] {
        try X25519.sharedSecret(X25519.PrivateKey(rawRepresentation: scalar), X25519.PublicKey(rawRepresentation: u))
    }

    /// RFC 7748 5.2's two single vectors: unclamped scalars, and a u-coordinate whose top bit is
    /// set (ignored, as 5 says).
    func testRFC7748Section5_2Vectors() throws {
        XCTAssertEqual(
            hex(
                try shared(
                    bytes("a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4"),
                    bytes("e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c"))),
            "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552")
        XCTAssertEqual(
            hex(
                try shared(
                    bytes("4b66e9d4d1b4673c5ad22691957d6af5c11b6421e0ea01d42ca4169e7918ba0d"),
                    bytes("e5210f12786811d3f4b7959d0538ae2c31dbe7106fc03c3efc4cd549c715a493"))),
            "95cbde9476e8907d7aade45cb4b873f88b595a68799fa152e6f8f7647aac7957")
    }

    /// RFC 7748 5.2: k = u = 9, then (k, u) = (X25519(k, u), k), 1 and 1,000 times.
    func testRFC7748IteratedVectors() throws {
        var k = [9] + [UInt8](repeating: 0, count: 31)
        var u = k
        for iteration in 1...1_000 {
            (k, u) = (try shared(k, u), k)
            if iteration == 1 { XCTAssertEqual(hex(k), "422c8e7a6227d7bca1350b3e2bb7279f7897b87bb6854b783c60e80311ae3079") }
        }
        XCTAssertEqual(hex(k), "684cf59ba83309552800ef566f2f4d3c1c3887c49360e3875f2eb94d99532c51")
    }

    /// RFC 7748 6.1: both public keys, and the one shared secret from either side.
    func testRFC7748Section6_1DiffieHellman() throws {
        let alice = try X25519.PrivateKey(rawRepresentation: bytes("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a"))
        let bob = try X25519.PrivateKey(rawRepresentation: bytes("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb"))
        XCTAssertEqual(hex(alice.publicKey.rawRepresentation), "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a")
        XCTAssertEqual(hex(bob.publicKey.rawRepresentation), "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f")
        let secret = "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742"
        XCTAssertEqual(hex(try X25519.sharedSecret(alice, bob.publicKey)), secret)
        XCTAssertEqual(hex(try X25519.sharedSecret(bob, alice.publicKey)), secret)
        // The raw key is kept as given (a key file's bytes), not clamped.
        XCTAssertEqual(hex(alice.rawRepresentation), "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a")
    }

    /// Low-order public keys (u = 0, u = 1, and a point of order 8) give all zeros: refused.
    func testLowOrderPublicKeysAreRefused() throws {
        let key = try X25519.PrivateKey(rawRepresentation: Array(1...32))
        let lowOrder = [
            [UInt8](repeating: 0, count: 32), [1] + [UInt8](repeating: 0, count: 31),
            bytes("e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800"),
        ]
        for point in lowOrder {
            XCTAssertThrowsError(try X25519.sharedSecret(key, X25519.PublicKey(rawRepresentation: point)), hex(point))
        }
    }

    func testWrongLengthsAreRefusedAndGeneratedKeysDiffer() throws {
        XCTAssertThrowsError(try X25519.PrivateKey(rawRepresentation: [UInt8](repeating: 1, count: 31)))
        XCTAssertThrowsError(try X25519.PublicKey(rawRepresentation: [UInt8](repeating: 1, count: 33)))
        let first = X25519.PrivateKey.generate()
        let second = X25519.PrivateKey.generate()
        XCTAssertEqual(first.rawRepresentation.count, 32)
        XCTAssertNotEqual(first.rawRepresentation, second.rawRepresentation)
        XCTAssertEqual(try X25519.PrivateKey(rawRepresentation: first.rawRepresentation).publicKey, first.publicKey)
        XCTAssertEqual(SecureRandom.bytes(0), [])
        XCTAssertEqual(SecureRandom.bytes(13).count, 13)
        XCTAssertNotEqual(SecureRandom.bytes(16), SecureRandom.bytes(16))
    }
}
