import XCTest

@testable import WebSocket

final class UTF8ValidatorTests: XCTestCase {
    private func isValid(_ bytes: [UInt8]) -> Bool {
        var validator = UTF8Validator()
        return validator.validate(bytes) && validator.isAtCharacterBoundary
    }

    func testValidSequences() {
        XCTAssertTrue(isValid([]))
        XCTAssertTrue(isValid(Array("Hello-µ@ßöäüàá-UTF-8!!".utf8)))
        XCTAssertTrue(isValid(Array("κόσμε".utf8)))
        XCTAssertTrue(isValid([0xF0, 0x9F, 0x98, 0x80])) // U+1F600
        XCTAssertTrue(isValid([0xF4, 0x8F, 0xBF, 0xBF])) // U+10FFFF
        XCTAssertTrue(isValid([0xEF, 0xBF, 0xBF])) // U+FFFF
        XCTAssertTrue(isValid([0xED, 0x9F, 0xBF])) // U+D7FF
        XCTAssertTrue(isValid([0xEE, 0x80, 0x80])) // U+E000
    }

    func testInvalidSequences() {
        XCTAssertFalse(isValid([0xC0, 0x80])) // overlong NUL
        XCTAssertFalse(isValid([0xC1, 0xBF])) // overlong
        XCTAssertFalse(isValid([0xE0, 0x80, 0x80])) // overlong 3-byte
        XCTAssertFalse(isValid([0xF0, 0x80, 0x80, 0x80])) // overlong 4-byte
        XCTAssertFalse(isValid([0xED, 0xA0, 0x80])) // surrogate U+D800
        XCTAssertFalse(isValid([0xF4, 0x90, 0x80, 0x80])) // U+110000
        XCTAssertFalse(isValid([0xF5, 0x80, 0x80, 0x80]))
        XCTAssertFalse(isValid([0xFF]))
        XCTAssertFalse(isValid([0x80])) // lone continuation
        XCTAssertFalse(isValid([0xCE])) // truncated at the end
        XCTAssertFalse(isValid([0xCE, 0x41]))
    }

    func testFailsAtTheFirstImpossibleByteAcrossSplits() {
        // Autobahn 6.4.1: "κόσμε" then F4 90 80 80; 0x90 after 0xF4 is already impossible.
        var validator = UTF8Validator()
        XCTAssertTrue(validator.validate(Array("κόσμε".utf8)))
        XCTAssertTrue(validator.validate([0xF4]))
        XCTAssertFalse(validator.isAtCharacterBoundary)
        XCTAssertFalse(validator.validate([0x90]))

        // A valid sequence split one byte per call.
        validator.reset()
        for byte: UInt8 in [0xF0, 0x9F, 0x98, 0x80] {
            XCTAssertTrue(validator.validate([byte]))
        }
        XCTAssertTrue(validator.isAtCharacterBoundary)
    }

    func testAgreesWithTheStandardLibraryOnRandomInput() {
        var generator = SplitMix64(seed: 7)
        let interesting: [UInt8] = [
            0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2,
            0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF,
        ]
        for _ in 0..<20_000 {
            let length = Int.random(in: 0...6, using: &generator)
            let bytes = (0..<length).map { _ in interesting.randomElement(using: &generator)! }
            let expected = String(validating: bytes, as: UTF8.self) != nil
            XCTAssertEqual(isValid(bytes), expected, "\(bytes.map { String($0, radix: 16) })")
            // Any split gives the same verdict.
            let split = Int.random(in: 0...length, using: &generator)
            var validator = UTF8Validator()
            let splitResult =
                validator.validate(bytes[..<split]) && validator.validate(bytes[split...])
                && validator.isAtCharacterBoundary
            XCTAssertEqual(splitResult, expected)
        }
    }
}
