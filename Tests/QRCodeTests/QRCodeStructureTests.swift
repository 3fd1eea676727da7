import XCTest

@testable import QRCode

/// Properties every symbol must have whatever its content: its size, the function patterns, the
/// format and version information read back from the modules.
final class QRCodeStructureTests: XCTestCase {
    private let pairingCode = "7KQ4-M2XD-9HZC-B0RT"

    func testSizeIsSeventeenPlusFourModulesPerVersion() throws {
        for length in [1, 30, 100, 300, 700] {
            let code = try QRCode(encoding: String(repeating: "a", count: length), errorCorrection: .low)
            XCTAssertEqual(code.size, 17 + 4 * code.version)
        }
        let code = try QRCode(encoding: pairingCode)
        XCTAssertEqual(code.version, 1, "19 alphanumeric characters fit version 1-M (20)")
        XCTAssertEqual(code.size, 21)
    }

    func testFinderPatternsAndSeparatorsAreInPlace() throws {
        for text in [pairingCode, String(repeating: "9", count: 500)] {
            let code = try QRCode(encoding: text, errorCorrection: .quartile)
            for (left, top) in [(0, 0), (code.size - 7, 0), (0, code.size - 7)] {
                for dy in -1...7 {
                    for dx in -1...7 {
                        let x = left + dx
                        let y = top + dy
                        guard x >= 0 && x < code.size && y >= 0 && y < code.size else { continue }
                        let ring = max(abs(dx - 3), abs(dy - 3))
                        XCTAssertEqual(code.isDark(x: x, y: y), ring == 0 || ring == 1 || ring == 3, "finder module (\(x), \(y))")
                    }
                }
            }
        }
    }

    func testTimingPatternsAndDarkModule() throws {
        let code = try QRCode(encoding: "HELLO WORLD 1234567890", errorCorrection: .high)
        for index in 8..<code.size - 8 {
            XCTAssertEqual(code.isDark(x: index, y: 6), index % 2 == 0, "row 6 timing at \(index)")
            XCTAssertEqual(code.isDark(x: 6, y: index), index % 2 == 0, "column 6 timing at \(index)")
        }
        XCTAssertTrue(code.isDark(x: 8, y: code.size - 8))
    }

    func testFormatInformationReadsBackAsLevelAndMaskInBothCopies() throws {
        let levelBits: [QRCode.ErrorCorrection: Int] = [.low: 0b01, .medium: 0b00, .quartile: 0b11, .high: 0b10]
        for level in QRCode.ErrorCorrection.allCases {
            for mask in 0...7 {
                let code = try QRCode(encoding: pairingCode, errorCorrection: level, mask: mask)
                XCTAssertEqual(code.mask, mask)
                XCTAssertEqual(code.errorCorrection, level)
                let first = readBits(code, Self.firstFormatCopy)
                let second = readBits(code, Self.secondFormatCopy(size: code.size))
                XCTAssertEqual(first, second, "both format copies agree")
                let unmasked = first ^ 0x5412
                XCTAssertEqual(unmasked >> 10, levelBits[level]! << 3 | mask)
                XCTAssertEqual(bchRemainder(unmasked, generator: 0x537, degree: 10), 0, "a BCH(15,5) codeword")
            }
        }
    }

    func testVersionInformationFromVersionSeven() throws {
        let small = try QRCode(encoding: String(repeating: "b", count: 100), errorCorrection: .low)
        XCTAssertEqual(small.version, 5)
        for length in [150, 400, 1000, 2900] {
            let code = try QRCode(encoding: String(repeating: "b", count: length), errorCorrection: .low)
            XCTAssertGreaterThanOrEqual(code.version, 7)
            let upperRight = (0..<18).map { (code.size - 11 + $0 % 3, $0 / 3) }
            let lowerLeft = (0..<18).map { ($0 / 3, code.size - 11 + $0 % 3) }
            let bits = readBits(code, upperRight)
            XCTAssertEqual(bits, readBits(code, lowerLeft))
            XCTAssertEqual(bits >> 12, code.version)
            XCTAssertEqual(bchRemainder(bits, generator: 0x1F25, degree: 12), 0, "a BCH(18,6) codeword")
        }
    }

    func testForcedMaskGivesTheAutomaticSymbolWhenItIsTheSameMask() throws {
        let automatic = try QRCode(encoding: pairingCode)
        XCTAssertEqual(try QRCode(encoding: pairingCode, mask: automatic.mask), automatic)
        let other = try QRCode(encoding: pairingCode, mask: (automatic.mask + 1) % 8)
        XCTAssertNotEqual(other, automatic)
    }

    // MARK: Helpers

    /// Format bit i of the copy around the upper-left finder, bit 0 first (ISO/IEC 18004 Figure 25).
    static let firstFormatCopy: [(Int, Int)] =
        (0..<6).map { (8, $0) } + [(8, 7), (8, 8), (7, 8)] + (9..<15).map { (14 - $0, 8) }

    /// Format bit i of the split copy along the right and bottom edges, bit 0 first.
    static func secondFormatCopy(size: Int) -> [(Int, Int)] {
        (0..<8).map { (size - 1 - $0, 8) } + (8..<15).map { (8, size - 15 + $0) }
    }

    /// The bits at `positions` (bit i at positions[i]) as a number.
    private func readBits(_ code: QRCode, _ positions: [(Int, Int)]) -> Int {
        positions.enumerated().reduce(0) { value, entry in
            value | (code.isDark(x: entry.element.0, y: entry.element.1) ? 1 << entry.offset : 0)
        }
    }

    /// The remainder of `value` divided by `generator` (a polynomial of `degree`) over GF(2).
    private func bchRemainder(_ value: Int, generator: Int, degree: Int) -> Int {
        var remainder = value
        for shift in stride(from: 30, through: degree, by: -1) where remainder >> shift & 1 == 1 {
            remainder ^= generator << (shift - degree)
        }
        return remainder
    }
}
