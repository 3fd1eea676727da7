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

    /// Integers of up to 18 digits are read from the bytes, longer ones from their text: both
    /// give what `Int64(text)` gives, and past Int64 a double.
    func testIntegersOfEveryLength() throws {
        var magnitude = ""
        for digit in 1...19 {
            magnitude += String(digit % 10)
            for text in [magnitude, "-" + magnitude] {
                XCTAssertEqual(try JSONParser.parse(text), .int(try XCTUnwrap(Int64(text))), text)
            }
        }
        XCTAssertEqual(try JSONParser.parse("999999999999999999"), .int(999_999_999_999_999_999))
        XCTAssertEqual(try JSONParser.parse("-9223372036854775808"), .int(Int64.min))
        XCTAssertEqual(try JSONParser.parse("9223372036854775808"), .double(9_223_372_036_854_775_808))
        XCTAssertEqual(try JSONParser.parse("[0,-0,7,-12]"), .array([.int(0), .int(0), .int(7), .int(-12)]))
    }

    /// A string without escapes is made from the input at once (validated unless it is ASCII);
    /// one with escapes is built piece by piece: both give the same strings and the same errors.
    func testStringsWithAndWithoutEscapes() throws {
        XCTAssertEqual(try JSONParser.parse(#""6F1C2A3B-0000-4000-8000-000000000001""#), .string("6F1C2A3B-0000-4000-8000-000000000001"))
        XCTAssertEqual(try JSONParser.parse(#""""#), .string(""))
        XCTAssertEqual(try JSONParser.parse(#""caf\#u{E9} \#u{6F22} \#u{1F355}""#), .string("caf\u{E9} \u{6F22} \u{1F355}"))
        XCTAssertEqual(try JSONParser.parse(#""caf\#u{E9}\n\u00e9""#), .string("caf\u{E9}\n\u{E9}"))
        XCTAssertEqual(try JSONParser.parse(#""ab\"cd""#), .string("ab\"cd"))
        // Invalid UTF-8 is refused with or without an escape in the string, where the string ends.
        for bytes: [UInt8] in [[0x22, 0xC3, 0x28, 0x22], [0x22, 0x5C, 0x6E, 0xC3, 0x28, 0x22], [0x22, 0x61, 0xED, 0xA0, 0x80, 0x22]] {
            XCTAssertThrowsError(try JSONParser.parse(bytes)) { error in
                XCTAssertEqual((error as? JSONParseError)?.message, "invalid UTF-8 in string")
                XCTAssertEqual((error as? JSONParseError)?.offset, bytes.count)
            }
        }
        XCTAssertThrowsError(try JSONParser.parse([0x22, 0x61, 0x62])) { error in
            XCTAssertEqual((error as? JSONParseError)?.message, "unterminated string")
        }
        XCTAssertThrowsError(try JSONParser.parse([0x22, 0x61, 0x0A, 0x22])) { error in
            XCTAssertEqual((error as? JSONParseError)?.message, "control character in string")
            XCTAssertEqual((error as? JSONParseError)?.offset, 2)
        }
    }
}
