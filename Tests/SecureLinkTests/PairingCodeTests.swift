import Noise
import SecureLink
import XCTest

final class PairingCodeTests: XCTestCase {
    /// Computed independently with Python (int.from_bytes, the Crockford alphabet; hmac/hashlib
    /// for RFC 5869 HKDF-SHA256 with salt "ordersync pairing v1", empty info, 32 bytes).
    let knownBytes: [UInt8] = [0x39, 0xE5, 0xC9, 0x8B, 0x1D, 0x4D, 0x7D, 0x4B, 0x85, 0x9A]
    let knownText = "77JW-K2RX-9NYM-Q1CT"
    let knownPreSharedKey = "8a1a00aa7b2d5c87a3876368b4ee95e4e4f5e362a5700f6e682232aeedc8f674"

    func testKnownCodeTextAndPreSharedKey() throws {
        let code = try PairingCode(bytes: knownBytes)
        XCTAssertEqual(code.description, knownText)
        XCTAssertEqual(hex(code.preSharedKey), knownPreSharedKey)
        XCTAssertEqual(try PairingCode(parsing: knownText), code)
    }

    func testTextRoundTripOfGeneratedCodes() throws {
        for seed in 0..<64 {
            let code = PairingCode.generate(using: counterRandom(seed: UInt8(seed)))
            let text = code.description
            XCTAssertEqual(text.count, 19, text)
            XCTAssertEqual(text.split(separator: "-").map(\.count), [4, 4, 4, 4], text)
            XCTAssertEqual(try PairingCode(parsing: text), code, text)
        }
        XCTAssertEqual(try PairingCode(bytes: Array(repeating: 0, count: 10)).description, "0000-0000-0000-0000")
        XCTAssertEqual(try PairingCode(bytes: Array(repeating: 0xFF, count: 10)).description, "ZZZZ-ZZZZ-ZZZZ-ZZZZ")
    }

    func testTolerantParsing() throws {
        let code = try PairingCode(bytes: knownBytes)
        XCTAssertEqual(try PairingCode(parsing: "77jw-k2rx-9nym-q1ct"), code)
        XCTAssertEqual(try PairingCode(parsing: "77JWK2RX9NYMQ1CT"), code)
        XCTAssertEqual(try PairingCode(parsing: " 77JW K2RX  9NYM-Q1CT "), code)
        XCTAssertEqual(try PairingCode(parsing: "77JW-K2RX-9NYM-QICT"), code)
        XCTAssertEqual(try PairingCode(parsing: "77JW-K2RX-9NYM-QlCT"), code)
        let zeros = try PairingCode(bytes: Array(repeating: 0, count: 10))
        XCTAssertEqual(try PairingCode(parsing: "oOoO-0000-0000-0000"), zeros)
    }

    func testRefusals() {
        assertInvalid("77JW-K2RX-9NYM-Q1C", "a pairing code has 16 characters, got 15")
        assertInvalid("77JW-K2RX-9NYM-Q1CTX", "a pairing code has 16 characters, got 17")
        assertInvalid("", "a pairing code has 16 characters, got 0")
        assertInvalid("77JW-K2RX-9NYM-Q1CU", "'U' is not a pairing-code character")
        assertInvalid("77JW-K2RX-9NYM-Q1Cu", "'u' is not a pairing-code character")
        assertInvalid("77JW_K2RX-9NYM-Q1CT", "'_' is not a pairing-code character")
        assertInvalid("77JW-K2RX-9NYM-Q1CÉ", "'É' is not a pairing-code character")
        XCTAssertThrowsError(try PairingCode(bytes: [1, 2, 3])) { error in
            XCTAssertEqual((error as? SecureLinkError)?.kind, .invalidCode)
        }
    }

    private func assertInvalid(_ text: String, _ message: String, line: UInt = #line) {
        XCTAssertThrowsError(try PairingCode(parsing: text), line: line) { error in
            guard let error = error as? SecureLinkError else { return XCTFail("\(error)", line: line) }
            XCTAssertEqual(error.kind, .invalidCode, line: line)
            XCTAssertEqual(error.message, message, line: line)
        }
    }
}
