import XCTest

@testable import CryptoPrimitives

/// SHA-1 and SHA-256 against FIPS 180's examples, HMAC-SHA256 against RFC 4231, HKDF-SHA256
/// against RFC 5869.
final class DigestTests: XCTestCase {
    private let twoBlock = Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
    private let millionA = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)

    func testSHA1MatchesFIPS180Examples() {
        XCTAssertEqual(hex(Digest.sha1([])), "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        XCTAssertEqual(hex(Digest.sha1(Array("abc".utf8))), "a9993e364706816aba3e25717850c26c9cd0d89d")
        XCTAssertEqual(hex(Digest.sha1(twoBlock)), "84983e441c3bd26ebaae4aa1f95129e5e54670f1")
        XCTAssertEqual(hex(Digest.sha1(millionA)), "34aa973cd4c4daa4f61eeb2bdbad27316534016f")
    }

    func testSHA256MatchesFIPS180Examples() {
        XCTAssertEqual(hex(Digest.sha256([])), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        XCTAssertEqual(hex(Digest.sha256(Array("abc".utf8))), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(hex(Digest.sha256(twoBlock)), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        XCTAssertEqual(hex(Digest.sha256(millionA)), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    /// The incremental hasher gives the one-shot digest however the bytes are cut.
    func testIncrementalSHA256EqualsOneShot() {
        var whole = SHA256Hasher()
        whole.update(millionA)
        let wholeDigest = whole.finalize()
        XCTAssertEqual(hex(wholeDigest), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
        for cut in [0, 1, 28, 55, twoBlock.count] {
            var hasher = SHA256Hasher()
            hasher.update(Array(twoBlock[..<cut]))
            hasher.update([])
            hasher.update(Array(twoBlock[cut...]))
            let digest = hasher.finalize()
            XCTAssertEqual(hex(digest), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1", "cut at \(cut)")
        }
        let empty = SHA256Hasher().finalize()
        XCTAssertEqual(empty, Digest.sha256([]))
    }

    /// RFC 4231 4.2-4.8 (test case 5's output truncated to 128 bits, as the RFC gives it).
    func testHMACSHA256MatchesRFC4231() {
        let longKey = [UInt8](repeating: 0xaa, count: 131)
        let cases: [(key: [UInt8], data: [UInt8], mac: String)] = [
            (
                [UInt8](repeating: 0x0b, count: 20), Array("Hi There".utf8),
                "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
            ),
            (
                Array("Jefe".utf8), Array("what do ya want for nothing?".utf8),
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
            ),
            (
                [UInt8](repeating: 0xaa, count: 20), [UInt8](repeating: 0xdd, count: 50),
                "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"
            ),
            (
                Array(1...25), [UInt8](repeating: 0xcd, count: 50),
                "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"
            ),
            ([UInt8](repeating: 0x0c, count: 20), Array("Test With Truncation".utf8), "a3b6167473100ee06e0c796c2955552b"),
            (
                longKey, Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
                "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
            ),
            (
                longKey,
                Array(
                    ("This is a test using a larger than block-size key and a larger than block-size data. "
                        + "The key needs to be hashed before being used by the HMAC algorithm.").utf8),
                "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"
            ),
        ]
        for (number, c) in cases.enumerated() {
            let mac = hex(Digest.hmacSHA256(key: c.key, data: c.data))
            XCTAssertEqual(String(mac.prefix(c.mac.count)), c.mac, "RFC 4231 test case \(number + 1)")
        }
    }

    /// An empty key is the zero-padded block of RFC 2104, not "no key".
    func testHMACWithEmptyKeyAndData() {
        XCTAssertEqual(
            hex(Digest.hmacSHA256(key: [], data: [])), "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad")
        XCTAssertEqual(Digest.hmacSHA256(key: [], data: [1]), Digest.hmacSHA256(key: [0], data: [1]))
    }

    /// RFC 5869 A.1-A.3 (the SHA-256 cases).
    func testHKDFSHA256MatchesRFC5869() {
        XCTAssertEqual(
            hex(
                Digest.hkdfSHA256(
                    inputKeyMaterial: [UInt8](repeating: 0x0b, count: 22), salt: Array(0x00...0x0c), info: Array(0xf0...0xf9),
                    outputByteCount: 42)),
            "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865")
        XCTAssertEqual(
            hex(
                Digest.hkdfSHA256(
                    inputKeyMaterial: Array(0x00...0x4f), salt: Array(0x60...0xaf), info: Array(0xb0...0xff), outputByteCount: 82)),
            "b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c59045a99cac7827271cb41c65e590e09da3275600c2f09b8"
                + "367793a9aca3db71cc30c58179ec3e87c14c01d5c1f3434f1d87")
        XCTAssertEqual(
            hex(Digest.hkdfSHA256(inputKeyMaterial: [UInt8](repeating: 0x0b, count: 22), salt: [], info: [], outputByteCount: 42)),
            "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8")
        XCTAssertEqual(Digest.hkdfSHA256(inputKeyMaterial: [1], salt: [2], info: [], outputByteCount: 0), [])
    }

    func testConstantTimeEqual() {
        XCTAssertTrue(constantTimeEqual([], []))
        XCTAssertTrue(constantTimeEqual([1, 2, 3], [1, 2, 3]))
        XCTAssertFalse(constantTimeEqual([1, 2, 3], [1, 2, 4]))
        XCTAssertFalse(constantTimeEqual([1, 2, 3], [1, 2]))
        XCTAssertFalse(constantTimeEqual([0x80], [0x00]))
    }
}
