import XCTest

@testable import JSON

/// The byte serializer: exact escapes, and a size count that matches what it writes.
final class SerializationTests: XCTestCase {
    private let samples: [JSONValue] = [
        .null, .bool(true), .bool(false), .int(0), .int(-7), .int(Int64.max), .int(Int64.min), .double(1.5), .double(3),
        .string(""), .string("plain"), .string("quote \" backslash \\ slash /"), .string("\n\r\t\u{08}\u{0C}\u{01}\u{1F}"),
        .string("line\u{2028}para\u{2029}end"), .string("é ü 中文 🍕 \u{E2}"), .string("\u{2027}\u{202A}"),
        .array([]), .array([.int(1), .string("a"), .null]),
        .object(JSONObject([("uuid", .string("A")), ("nested", .object(JSONObject([("k", .array([.bool(true)]))]))), ("", .null)])),
    ]

    func testEscapesAreTheShortestStandardOnes() {
        XCTAssertEqual(JSONValue.string("a\"b\\c\nd\u{01}e\u{2028}").serialized(), #""a\"b\\c\nd\u0001e\u2028""#)
        XCTAssertEqual(JSONValue.string("\u{1F}\u{08}\u{0C}\r\t").serialized(), #""\u001f\b\f\r\t""#)
        XCTAssertEqual(JSONValue.string("é🍕").serialized(), "\"é🍕\"")
        XCTAssertEqual(
            JSONValue.object(JSONObject([("a", .int(-12)), ("b", .array([.double(2), .double(0.5)]))])).serialized(),
            #"{"a":-12,"b":[2,0.5]}"#)
    }

    func testTheByteCountMatchesTheBytesAndTheTextReadsBack() throws {
        for value in samples {
            let bytes = value.serializedBytes()
            XCTAssertEqual(value.serializedByteCount, bytes.count, "\(value)")
            XCTAssertEqual(value.serialized(), String(decoding: bytes, as: UTF8.self))
            if case .double = value { continue }
            XCTAssertEqual(try JSONParser.parse(bytes), value, "round trip of \(value.serialized())")
        }
    }
}
