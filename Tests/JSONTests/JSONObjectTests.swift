import XCTest

@testable import JSON

final class JSONObjectTests: XCTestCase {
    /// An object text of `count` members `"k0":0` ... in order.
    private func objectText(members count: Int) -> [UInt8] {
        var text = "{"
        for n in 0..<count {
            if n > 0 { text += "," }
            text += "\"k\(n)\":\(n)"
        }
        text += "}"
        return Array(text.utf8)
    }

    func testRepeatedMemberIsRejectedWhereItStands() {
        // Small objects are scanned, larger ones hashed: both keep the rule.
        for count in [2, 8, 9, 500] {
            var text = String(decoding: objectText(members: count).dropLast(), as: UTF8.self)
            text += ",\"k\(count / 2)\":1}"
            let repeatedKeyEnd = text.utf8.count - 3
            XCTAssertThrowsError(try JSONParser.parse(text)) { error in
                XCTAssertEqual(
                    error as? JSONParseError,
                    JSONParseError(message: "duplicate member \"k\(count / 2)\"", offset: repeatedKeyEnd))
            }
        }
    }

    func testKeysCompareAsSwiftStrings() {
        // "\u00e9" and "e\u0301" are canonically equivalent: the same key, so a repeat.
        XCTAssertThrowsError(try JSONParser.parse(#"{"\u00e9":1,"e\u0301":2}"#))
        var members = (0..<20).map { ("k\($0)", JSONValue.int(Int64($0))) }
        members.append(("\u{E9}", .int(1)))
        let object = JSONObject(members)
        XCTAssertEqual(object["e\u{301}"], .int(1))
    }

    func testRejectsInvalidUTF8InAMemberName() {
        XCTAssertThrowsError(try JSONParser.parse([0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D]))
        // An overlong encoding of NUL in the name of a member that needs the index.
        let overlong =
            Array(String(decoding: objectText(members: 20).dropLast(), as: UTF8.self).utf8)
            + Array(#","#.utf8) + [0x22, 0xC0, 0x80, 0x22] + Array(":1}".utf8)
        XCTAssertThrowsError(try JSONParser.parse(overlong))
    }

    func testLargeObjectKeepsOrderAndRoundTrips() throws {
        let text = objectText(members: 3000)
        let value = try JSONParser.parse(text)
        let object = try XCTUnwrap(value.objectValue)
        XCTAssertEqual(object.keys, (0..<3000).map { "k\($0)" })
        for n in stride(from: 0, to: 3000, by: 7) {
            XCTAssertEqual(object["k\(n)"], .int(Int64(n)))
        }
        XCTAssertNil(object["k3000"])
        XCTAssertEqual(value.serializedBytes(), text)
    }

    func testAssignReplaceAndRemoveKeepOrder() {
        var object = JSONObject()
        for n in 0..<100 { object["k\(n)"] = .int(Int64(n)) }
        object["k10"] = .string("ten")
        XCTAssertEqual(object.keys[10], "k10")
        XCTAssertEqual(object["k10"], .string("ten"))

        object["k10"] = nil
        object["k20"] = nil
        XCTAssertNil(object["k10"])
        XCTAssertEqual(object.members.count, 98)
        XCTAssertEqual(object["k99"], .int(99))
        XCTAssertEqual(object["k21"], .int(21))
        XCTAssertEqual(Array(object.keys.prefix(12)), (0..<13).filter { $0 != 10 }.map { "k\($0)" })

        object["k10"] = .null
        XCTAssertEqual(object.keys.last, "k10")
        for n in 0..<95 { object["k\(n)"] = nil }
        XCTAssertEqual(object.keys, ["k95", "k96", "k97", "k98", "k99"])
        XCTAssertEqual(object["k97"], .int(97))
        object["nothing"] = nil
        XCTAssertEqual(object.members.count, 5)
    }

    func testInitWithARepeatedKeyKeepsFirstPlaceAndLastValue() {
        let object = JSONObject([("a", .int(1)), ("b", .int(2)), ("a", .int(3))])
        XCTAssertEqual(object.keys, ["a", "b"])
        XCTAssertEqual(object["a"], .int(3))
        XCTAssertEqual(JSONValue.object(object).serialized(), #"{"a":3,"b":2}"#)
    }

    func testEqualityFollowsMemberOrder() throws {
        XCTAssertEqual(try JSONParser.parse(#"{"a":1,"b":2}"#), .object(JSONObject([("a", .int(1)), ("b", .int(2))])))
        XCTAssertNotEqual(try JSONParser.parse(#"{"a":1,"b":2}"#), try JSONParser.parse(#"{"b":2,"a":1}"#))
    }

    /// Counts the key comparisons and index slots the parser inspects: with one scan of every
    /// member per insert, 10 times the members would cost about 100 times the work.
    func testMemberWorkGrowsLinearly() throws {
        let small = try JSONParser.parseCountingKeyProbes(objectText(members: 10_000))
        let large = try JSONParser.parseCountingKeyProbes(objectText(members: 100_000))
        XCTAssertEqual(large.value.objectValue?.members.count, 100_000)
        XCTAssertGreaterThanOrEqual(small.keyProbes, 10_000)
        let ratio = Double(large.keyProbes) / Double(small.keyProbes)
        XCTAssertLessThan(ratio, 15, "10x the members cost \(ratio)x the key probes")
        // Each member costs a few probes, not a number growing with the object.
        XCTAssertLessThan(large.keyProbes, 100_000 * 8, "\(large.keyProbes) key probes for 100,000 members")
    }

    func testSmallObjectsNeedNoMoreThanAScan() throws {
        // 8 members are scanned: 0 + 1 + ... + 7 comparisons.
        let parsed = try JSONParser.parseCountingKeyProbes(objectText(members: 8))
        XCTAssertEqual(parsed.keyProbes, 28)
    }
}
