import XCTest
@testable import SyncCore

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
        let bad = ["", "{", "{\"a\"}", "[1,]", "01", "1.", "-", "tru", "\"\\x\"", "\"\u{01}\"", "{\"a\":1,\"a\":2}",
                   "[1] x", "\"\\ud800\"", "1e", "{'a':1}", "nan"]
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

final class OrderTimestampTests: XCTestCase {
    func testStorePOSFormRoundTrips() throws {
        let t = try XCTUnwrap(OrderTimestamp(parsing: "2016-01-12T21:35:16+0800"))
        XCTAssertEqual(t.epochMillis, 1_452_605_716_000)
        XCTAssertEqual(t.offsetMinutes, 480)
        XCTAssertEqual(t.storePOSText, "2016-01-12T21:35:16+0800")
    }

    func testRFC3339Forms() throws {
        let z = try XCTUnwrap(OrderTimestamp(parsing: "2016-01-12T13:35:16Z"))
        XCTAssertEqual(z.epochMillis, 1_452_605_716_000)
        XCTAssertEqual(z.storePOSText, "2016-01-12T13:35:16+0000")
        let f = try XCTUnwrap(OrderTimestamp(parsing: "2016-01-12T21:35:16.25+08:00"))
        XCTAssertEqual(f.epochMillis, 1_452_605_716_250)
        let neg = try XCTUnwrap(OrderTimestamp(parsing: "1969-12-31 23:59:59-05:30"))
        XCTAssertEqual(neg.storePOSText, "1969-12-31T23:59:59-0530")
        XCTAssertEqual(neg.epochMillis, (-1 + 330 * 60) * 1000)
    }

    func testRejectsNonsense() {
        for s in ["", "2016-01-12", "2016-13-01T00:00:00Z", "2016-02-30T00:00:00Z", "2016-01-12T25:00:00Z",
                  "2016-01-12T21:35:16", "2016-01-12T21:35:16+08", "yesterday", "2016-01-12T21:35:16+0800x"] {
            XCTAssertNil(OrderTimestamp(parsing: s), s)
        }
        XCTAssertNotNil(OrderTimestamp(parsing: "2016-02-29T00:00:00Z"))
    }
}
