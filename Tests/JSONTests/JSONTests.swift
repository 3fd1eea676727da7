import XCTest

@testable import JSON

final class JSONTests: XCTestCase {
    func testParsesAndKeepsMemberOrder() throws {
        let v = try JSONParser.parse(#"{"b":1,"a":[true,false,null,-2.5,"x\u00e9\n"],"c":{}}"#)
        XCTAssertEqual(v.objectValue?.keys, ["b", "a", "c"])
        XCTAssertEqual(v.objectValue?["a"], .array([.bool(true), .bool(false), .null, .double(-2.5), .string("xé\n")]))
        XCTAssertEqual(v.serialized(), #"{"b":1,"a":[true,false,null,-2.5,"xé\n"],"c":{}}"#)
    }

    func testRoundTripsEscapesAndSurrogates() throws {
        let v = try JSONParser.parse(#""\ud83c\udf55 \"q\" \\ \/ \t \u0001""#)
        XCTAssertEqual(v, .string("🍕 \"q\" \\ / \t \u{01}"))
        XCTAssertEqual(try JSONParser.parse(v.serialized()), v)
    }

    func testRejectsBadInputWithOffsets() {
        let bad = [
            "", "{", "{\"a\"}", "[1,]", "01", "1.", "-", "tru", "\"\\x\"", "\"\u{01}\"", "{\"a\":1,\"a\":2}",
            "[1] x", "\"\\ud800\"", "1e", "{'a':1}", "nan",
        ]
        for text in bad {
            XCTAssertThrowsError(try JSONParser.parse(text), "accepted \(text)")
        }
    }

    func testRejectsInvalidUTF8() {
        XCTAssertThrowsError(try JSONParser.parse([0x22, 0xC3, 0x28, 0x22]))
    }

    func testNestingLimit() {
        let deep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        XCTAssertThrowsError(try JSONParser.parse(deep))
        let ok = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        XCTAssertNoThrow(try JSONParser.parse(ok))
    }

    func testNumbers() throws {
        XCTAssertEqual(try JSONParser.parse("9223372036854775807"), .int(Int64.max))
        XCTAssertEqual(try JSONParser.parse("-0"), .int(0))
        XCTAssertEqual(try JSONParser.parse("1e2"), .double(100))
        XCTAssertEqual(try JSONParser.parse("1e2").intValue, 100)
        XCTAssertNil(try JSONParser.parse("1.5").intValue)
        XCTAssertThrowsError(try JSONParser.parse("1e999"))
    }
}
