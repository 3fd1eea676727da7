import XCTest

@testable import QRCode

/// Mode choice and capacity: each text lands in the smallest version that holds it, one more
/// character moves it to the next version, and past version 40 it is refused.
final class QRCodeCapacityTests: XCTestCase {
    /// (text of `count` characters, level, the most characters the version holds, that version)
    /// from ISO/IEC 18004:2015 Table 7.
    private let edges: [(character: Character, level: QRCode.ErrorCorrection, capacity: Int, version: Int)] = [
        ("7", .low, 41, 1), // numeric, 1-L
        ("7", .high, 17, 1), // numeric, 1-H
        ("K", .medium, 20, 1), // alphanumeric, 1-M: the pairing code's 19 characters fit
        ("K", .quartile, 16, 1), // alphanumeric, 1-Q
        ("k", .high, 7, 1), // byte, 1-H
        ("k", .low, 230, 9), // byte, 9-L: version 10 widens the character count to 16 bits
        ("7", .medium, 432, 9), // numeric, 9-M
        ("K", .high, 1852, 40), // alphanumeric, 40-H
        ("k", .low, 2953, 40), // byte, 40-L
        ("7", .low, 7089, 40), // numeric, 40-L
    ]

    func testCapacityEdgesPickTheNextVersion() throws {
        for edge in edges {
            let full = String(repeating: edge.character, count: edge.capacity)
            XCTAssertEqual(try QRCode(encoding: full, errorCorrection: edge.level).version, edge.version, "\(edge)")
            let oneMore = full + String(edge.character)
            if edge.version == 40 {
                XCTAssertThrowsError(try QRCode(encoding: oneMore, errorCorrection: edge.level)) { error in
                    XCTAssertEqual((error as? QRCodeError)?.kind, .textTooLong)
                }
            } else {
                XCTAssertEqual(try QRCode(encoding: oneMore, errorCorrection: edge.level).version, edge.version + 1, "\(edge) + 1")
            }
        }
    }

    func testModeIsTheMostCompactThatHoldsTheWholeText() {
        XCTAssertEqual(QRSegment(text: "0123456789").mode, .numeric)
        XCTAssertEqual(QRSegment(text: "7KQ4-M2XD-9HZC-B0RT").mode, .alphanumeric)
        XCTAssertEqual(QRSegment(text: "HTTP://X.Y/A B$%*+").mode, .alphanumeric)
        XCTAssertEqual(QRSegment(text: "7kq4").mode, .byte)
        XCTAssertEqual(QRSegment(text: "héllo").mode, .byte)
        XCTAssertEqual(QRSegment(text: "héllo").characterCount, 6, "UTF-8 bytes are counted")
        // Numeric packs 3 digits in 10 bits, alphanumeric 2 characters in 11, bytes 8 bits each.
        XCTAssertEqual(QRSegment(text: "12345678").payload.count, 27)
        XCTAssertEqual(QRSegment(text: "AC-42").payload.count, 28)
    }

    func testDataCodewordsEndWithTerminatorAndAlternatingPads() {
        // "01234567" at 1-M (ISO/IEC 18004:2015 Annex I.2): 0001 0000001000 0000001100
        // 0101011001 1000011 then the terminator and pads up to 16 data codewords.
        let codewords = QRSegment(text: "01234567").dataCodewords(version: 1, errorCorrection: .medium)
        XCTAssertEqual(
            codewords,
            [0x10, 0x20, 0x0C, 0x56, 0x61, 0x80, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11])
        // A stream that ends on a codeword boundary after its terminator takes no padding bits.
        XCTAssertEqual(QRSegment(text: "xx").dataCodewords(version: 1, errorCorrection: .low).prefix(5), [0x40, 0x27, 0x87, 0x80, 0xEC])
    }

    func testReedSolomonMatchesTheStandardExample() {
        // ISO/IEC 18004:2015 Annex I.3: the 16 data codewords above give these 10 at 1-M.
        let data: [UInt8] = [0x10, 0x20, 0x0C, 0x56, 0x61, 0x80, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11]
        XCTAssertEqual(
            ReedSolomonEncoder(degree: 10).remainder(of: data[...]), [0xA5, 0x24, 0xD4, 0xC1, 0xED, 0x36, 0xC7, 0x87, 0x2C, 0x55])
    }

    func testTooLongTextAndBadMaskThrow() {
        XCTAssertThrowsError(try QRCode(encoding: String(repeating: "x", count: 1274), errorCorrection: .high)) { error in
            let qrError = error as? QRCodeError
            XCTAssertEqual(qrError?.kind, .textTooLong)
            XCTAssertTrue(qrError?.description.contains("level H") ?? false, "\(error)")
        }
        XCTAssertEqual(try QRCode(encoding: String(repeating: "x", count: 1273), errorCorrection: .high).version, 40)
        for mask in [-1, 8] {
            XCTAssertThrowsError(try QRCode(encoding: "A", mask: mask)) { error in
                XCTAssertEqual((error as? QRCodeError)?.kind, .invalidMask)
            }
        }
    }
}
