import Noise
import SecureLink
import XCTest

final class PairingCodeTests: XCTestCase {
    func testTextRoundTrip() throws {
        let code = try PairingCode(bytes: [0x39, 0xE5, 0xC9, 0x8B, 0x1D, 0x4D, 0x7D, 0x4B, 0x85, 0x9A])
        XCTAssertEqual(code.description.count, 19)
        XCTAssertEqual(try PairingCode(parsing: code.description), code)
    }
}
