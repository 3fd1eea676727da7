import XCTest

@testable import QRCode

/// The terminal rendering: half blocks, two module rows per line, light modules and the quiet
/// zone drawn as blocks, and nothing lost on the way.
final class QRCodeTerminalTextTests: XCTestCase {
    func testTerminalTextDecodesBackToTheModulesWithAQuietZone() throws {
        for text in ["7KQ4-M2XD-9HZC-B0RT", String(repeating: "pairing ", count: 20)] {
            let code = try QRCode(encoding: text)
            let extent = code.size + 2 * QRCode.quietZoneModules
            let lines = code.terminalText().split(separator: "\n", omittingEmptySubsequences: false).map { Array($0.unicodeScalars) }
            XCTAssertEqual(lines.count, (extent + 1) / 2)
            var drawn = [[Bool]](repeating: [], count: 2 * lines.count)
            for (index, line) in lines.enumerated() {
                XCTAssertEqual(line.count, extent, "line \(index)")
                for scalar in line {
                    let (top, bottom): (Bool, Bool) =
                        switch scalar {
                        case "█": (true, true)
                        case "▀": (true, false)
                        case "▄": (false, true)
                        case " ": (false, false)
                        default: (false, false)
                        }
                    XCTAssertTrue("█▀▄ ".unicodeScalars.contains(scalar), "unexpected \(scalar)")
                    drawn[2 * index].append(top)
                    drawn[2 * index + 1].append(bottom)
                }
            }
            let quiet = QRCode.quietZoneModules
            for y in 0..<extent {
                for x in 0..<extent {
                    let inSymbol = (quiet..<quiet + code.size).contains(x) && (quiet..<quiet + code.size).contains(y)
                    let light = inSymbol ? !code.isDark(x: x - quiet, y: y - quiet) : true
                    XCTAssertEqual(drawn[y][x], light, "module (\(x), \(y)) with the quiet zone")
                }
            }
            XCTAssertEqual(drawn[extent], Array(repeating: false, count: extent), "the half row past the end is background")
        }
    }
}
