import XCTest

@testable import Noise

/// The cipher on OpenSSL (`NoiseChaChaPoly`, a context per key, sealing in place) against an
/// independent one that is not OpenSSL: `ChaChaPolyReference`, RFC 8439 in plain Swift (itself
/// checked against the RFC's vectors in `ChaChaPolyReferenceTests`). The same bytes on the wire,
/// and each opens what the other sealed.
final class NoiseCipherReferenceTests: XCTestCase {
    private let key = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
    private let lengths = [0, 1, 15, 16, 17, 63, 64, 65, 255, 1_000, 4_096, 65_519]
    private let nonces: [UInt64] = [0, 1, 2, 255, 256, 0xFFFF_FFFF, 0x1_0000_0000, UInt64.max - 1, UInt64.max]

    private func plaintext(_ length: Int, _ salt: Int) -> [UInt8] {
        (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ salt) }
    }

    /// The reference's seal with Noise's nonce layout: ciphertext then tag.
    private func referenceSeal(nonce: UInt64, ad: [UInt8], plaintext: [UInt8]) throws -> [UInt8] {
        ChaChaPolyReference.seal(key: key, nonce: NoiseCrypto.nonceBytes(nonce), ad: ad, plaintext: plaintext)
    }

    private struct ReferenceOpenFailed: Error {}

    private func referenceOpen(nonce: UInt64, ad: [UInt8], sealed: [UInt8]) throws -> [UInt8] {
        guard let text = ChaChaPolyReference.open(key: key, nonce: NoiseCrypto.nonceBytes(nonce), ad: ad, sealed: sealed) else {
            throw ReferenceOpenFailed()
        }
        return text
    }

    func testSealedBytesMatchTheReferenceAndEachOpensTheOther() throws {
        let cipher = NoiseChaChaPoly(key: key)
        for (index, length) in lengths.enumerated() {
            for nonce in nonces {
                for ad in [[], Array("associated data".utf8)] {
                    let text = plaintext(length, index)
                    let expected = try referenceSeal(nonce: nonce, ad: ad, plaintext: text)
                    let sealed = NoiseCrypto.encrypt(key: cipher, nonce: nonce, ad: ad, plaintext: text)
                    XCTAssertEqual(sealed, expected, "length \(length), nonce \(nonce), ad \(ad.count)")
                    XCTAssertEqual(try NoiseCrypto.decrypt(key: cipher, nonce: nonce, ad: ad, ciphertext: expected), text)
                    XCTAssertEqual(try referenceOpen(nonce: nonce, ad: ad, sealed: sealed), text)
                }
            }
        }
    }

    /// One context seals and opens many messages in turn, as a link does: nothing of one message
    /// (its nonce, its length, its associated data) carries over into the next.
    func testOneContextAcrossMessagesInAnyOrder() throws {
        let cipher = NoiseChaChaPoly(key: key)
        var sent: [(UInt64, [UInt8], [UInt8])] = []
        for step in 0..<200 {
            let nonce = UInt64(step * 7919 % 1_000)
            let ad: [UInt8] = step % 3 == 0 ? Array("h".utf8) : []
            let text = plaintext((step * 37) % 300, step)
            let sealed = NoiseCrypto.encrypt(key: cipher, nonce: nonce, ad: ad, plaintext: text)
            XCTAssertEqual(sealed, try referenceSeal(nonce: nonce, ad: ad, plaintext: text), "step \(step)")
            sent.append((nonce, ad, sealed))
            if step % 5 == 0, let earlier = sent.randomElement() {
                XCTAssertNotNil(cipher.open(nonce: earlier.0, ad: earlier.1, ciphertext: earlier.2))
            }
        }
    }

    func testInPlaceLeavesThePrefixAndEqualsTheCopyingPath() throws {
        for length in lengths {
            var copying = NoiseCipherState(key: key)
            var inPlace = NoiseCipherState(key: key)
            for round in 0..<3 {
                let text = plaintext(length, round)
                let prefix: [UInt8] = [0x82, 0x7E, UInt8(round)]
                var buffer = prefix + text
                try inPlace.encrypt(inPlace: &buffer, from: prefix.count)
                XCTAssertEqual(Array(buffer[..<prefix.count]), prefix)
                XCTAssertEqual(Array(buffer[prefix.count...]), try copying.encrypt(withAd: [], plaintext: text))
                XCTAssertEqual(inPlace.nonce, copying.nonce)
            }
        }
    }

    func testAlteredMessagesFailWithBothCiphers() throws {
        let cipher = NoiseChaChaPoly(key: key)
        let text = plaintext(100, 1)
        let sealed = NoiseCrypto.encrypt(key: cipher, nonce: 9, ad: [], plaintext: text)
        for position in [0, 50, 99, 100, 115] {
            var altered = sealed
            altered[position] ^= 0x01
            XCTAssertNil(cipher.open(nonce: 9, ad: [], ciphertext: altered), "byte \(position)")
            XCTAssertThrowsError(try referenceOpen(nonce: 9, ad: [], sealed: altered))
        }
        XCTAssertNil(cipher.open(nonce: 10, ad: [], ciphertext: sealed), "another nonce")
        XCTAssertNil(cipher.open(nonce: 9, ad: [1], ciphertext: sealed), "other associated data")
        XCTAssertEqual(cipher.open(nonce: 9, ad: [], ciphertext: sealed), text, "a failure leaves the context usable")
    }
}
