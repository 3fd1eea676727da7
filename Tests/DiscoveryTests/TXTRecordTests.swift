import CAvahi
import XCTest

@testable import Discovery

final class TXTRecordTests: XCTestCase {
    func testEncodesPairsInOrderAsKeyEqualsValue() throws {
        let entries = try TXTRecord.encode([("proto", "ordersync/1"), ("store", "abc"), ("empty", "")])
        XCTAssertEqual(
            entries.map { String(decoding: $0, as: UTF8.self) },
            ["proto=ordersync/1", "store=abc", "empty="])
    }

    func testRejectsKeysTheRFCForbids() {
        for key in ["", "a=b", "tab\t", "caf\u{e9}"] {
            XCTAssertThrowsError(try TXTRecord.encode([(key, "v")]), "key \(key.debugDescription)") { error in
                XCTAssertEqual((error as? DiscoveryError)?.code, .invalidAnnouncement)
            }
        }
    }

    func testRejectsDuplicateKeysIgnoringCase() {
        XCTAssertThrowsError(try TXTRecord.encode([("store", "a"), ("STORE", "b")]))
    }

    func testRejectsEntriesLongerThan255Bytes() throws {
        XCTAssertNoThrow(try TXTRecord.encode([("k", String(repeating: "x", count: 253))]))
        XCTAssertThrowsError(try TXTRecord.encode([("k", String(repeating: "x", count: 254))]))
    }

    func testRejectsRecordsOver1300Bytes() {
        let pairs = (0..<6).map { ("key\($0)", String(repeating: "v", count: 240)) }
        XCTAssertThrowsError(try TXTRecord.encode(pairs))
    }

    func testRejectsNulInValues() {
        XCTAssertThrowsError(try TXTRecord.encode([("k", "a\u{0}b")]))
    }

    func testDecodesBooleanEmptyDuplicateAndKeylessEntries() {
        let entries = ["proto=ordersync/1", "flag", "empty=", "=ignored", "Proto=second", "eq=a=b", ""]
            .map { Array($0.utf8) }
        XCTAssertEqual(
            TXTRecord.decode(entries),
            ["proto": "ordersync/1", "flag": "", "empty": "", "eq": "a=b"])
    }

    func testDecodesInvalidUTF8WithReplacement() {
        XCTAssertEqual(TXTRecord.decode([[UInt8(ascii: "k"), UInt8(ascii: "="), 0xFF]]), ["k": "\u{FFFD}"])
    }

    func testAvahiStringListRoundTripKeepsOrder() {
        let entries = ["a=1", "b=2", "c"].map { Array($0.utf8) }
        let list = AvahiText.makeList(entries)
        defer { avahi_string_list_free(list) }
        XCTAssertEqual(AvahiText.entries(of: list), entries)
        XCTAssertEqual(AvahiText.entries(of: nil), [])
    }
}
