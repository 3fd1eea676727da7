import Foundation
import XCTest

@testable import JSON

/// The parser's member limit: a message from a peer with too many members in one object is
/// refused as soon as the member after the last one allowed begins.
final class JSONLimitTests: XCTestCase {
    private func objectText(members count: Int) -> String {
        "{" + (0..<count).map { "\"k\($0)\":\($0)" }.joined(separator: ",") + "}"
    }

    func testAnObjectAtTheLimitIsAcceptedAndOneMoreIsRefusedAsALimit() throws {
        let limit = JSONParser.peerMaxMembersPerObject
        XCTAssertEqual(limit, 256)
        let full = try JSONParser.parse(objectText(members: limit), maxMembersPerObject: limit)
        XCTAssertEqual(full.objectValue?.members.count, limit)
        XCTAssertThrowsError(try JSONParser.parse(objectText(members: limit + 1), maxMembersPerObject: limit)) { error in
            let e = error as? JSONParseError
            XCTAssertEqual(e?.isLimitExceeded, true)
            XCTAssertEqual(e?.message, "object has more than 256 members")
        }
        // Without a limit (the node's own files), the same text parses.
        XCTAssertEqual(try JSONParser.parse(objectText(members: limit + 1)).objectValue?.members.count, limit + 1)
    }

    func testTheLimitHoldsForNestedObjectsAndNotForArrays() throws {
        let nested = "{\"orders\":[{\"uuid\":\"x\",\"extra\":\(objectText(members: 300))}]}"
        XCTAssertThrowsError(try JSONParser.parse(nested, maxMembersPerObject: 256)) { error in
            XCTAssertEqual((error as? JSONParseError)?.isLimitExceeded, true)
        }
        let longArray = "[" + (0..<5000).map(String.init).joined(separator: ",") + "]"
        XCTAssertEqual(try JSONParser.parse(longArray, maxMembersPerObject: 256).arrayValue?.count, 5000)
    }

    func testGrammarErrorsAreNotLimitErrors() {
        XCTAssertThrowsError(try JSONParser.parse("{\"a\":}", maxMembersPerObject: 256)) { error in
            XCTAssertEqual((error as? JSONParseError)?.isLimitExceeded, false)
        }
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        XCTAssertThrowsError(try JSONParser.parse(deep)) { error in
            XCTAssertEqual((error as? JSONParseError)?.isLimitExceeded, true)
        }
    }

    func testSixtyThousandMembersAreRefusedAfterReadingFewOfThem() throws {
        let text = Array(objectText(members: 60_000).utf8)
        XCTAssertGreaterThan(text.count, 700_000)
        let start = ContinuousClock.now
        XCTAssertThrowsError(try JSONParser.parse(text, maxMembersPerObject: 256)) { error in
            let e = error as? JSONParseError
            XCTAssertEqual(e?.isLimitExceeded, true)
            // Refused where the 257th member begins, not after reading the rest.
            XCTAssertLessThan(e?.offset ?? .max, 4000)
        }
        XCTAssertLessThan(ContinuousClock.now - start, .milliseconds(50))
    }
}
