import Foundation
import JSON
import XCTest

@testable import SyncCore

/// The operation ids leading a standby's snapshot (`opIds`, Docs/PROTOCOL.md 7.2): cut by bytes
/// so that every message stays within what a secure link seals, read back exactly, refused when
/// malformed, and collected only in order.
final class AppliedIdsPartTests: XCTestCase {
    private func decode(_ bytes: [UInt8]) -> Result<StandbyMessage, WireError>? {
        StandbyMessage.decode(try! XCTUnwrap((try? JSONParser.parse(bytes))?.objectValue))
    }

    func testIdsAreCutByBytesAndReadBackWhole() throws {
        var ids: [String: Int64] = [:]
        for i in 1...100_000 { ids[UUID(uuidString: String(format: "9437C8F5-D742-46CB-9847-%012d", i))!.uuidString] = Int64(i) }
        let parts = AppliedIdsPart.parts(of: ids, seq: 100_000)
        let bytes = parts.map { $0.encodedBytes() }
        XCTAssertEqual(parts.count, bytes.count)
        XCTAssertGreaterThan(parts.count, 1, "100,000 ids are more than one message")
        XCTAssertLessThanOrEqual(parts.count, AppliedIdsPart.maxParts)
        XCTAssertTrue(bytes.allSatisfy { $0.count <= AppliedIdsPart.partBytes + 200 }, "\(bytes.map(\.count).max() ?? 0)")
        XCTAssertTrue(bytes.allSatisfy { $0.count < 1 << 20 }, "each within a secure link's message")
        let total = bytes.map(\.count).reduce(0, +)
        XCTAssertGreaterThan(total, 4_500_000)
        XCTAssertLessThan(total, 5_000_000, "about 47 bytes an id")
        XCTAssertEqual(parts.count, 10)
        var collection = AppliedIdsCollection(seq: 0, parts: 0, received: 0, ids: [:])
        for b in bytes {
            guard case .success(.appliedIds(let p))? = decode(b) else { return XCTFail("not read back") }
            XCTAssertTrue(collection.add(p))
        }
        XCTAssertTrue(collection.isComplete)
        XCTAssertEqual(collection.seq, 100_000)
        XCTAssertEqual(collection.ids, ids)
        XCTAssertEqual(AppliedIdsPart.parts(of: [:], seq: 4), [], "no ids, no message")
    }

    func testAPartOutOfOrderIsNotCollected() {
        let parts = AppliedIdsPart.parts(of: ["a": 1, "b": 2, "c": 3], seq: 3, partBytes: 10)
        XCTAssertEqual(parts.map(\.part), [1, 2, 3])
        XCTAssertEqual(parts.map(\.parts), [3, 3, 3])
        XCTAssertEqual(parts.map(\.ids), [["a": 1], ["b": 2], ["c": 3]], "by seq")
        var c = AppliedIdsCollection(seq: 0, parts: 0, received: 0, ids: [:])
        XCTAssertFalse(c.add(parts[1]), "a second part without the first")
        XCTAssertTrue(c.add(parts[0]))
        XCTAssertFalse(c.add(parts[2]), "the third after the first")
        XCTAssertFalse(c.isComplete)
    }

    func testAMalformedPartIsRefused() {
        for text in [
            #"{"type":"opIds","seq":3,"part":1,"parts":1}"#, #"{"type":"opIds","seq":3,"part":2,"parts":1,"ids":[]}"#,
            #"{"type":"opIds","seq":3,"part":1,"parts":65,"ids":[]}"#, #"{"type":"opIds","seq":3,"part":1,"parts":1,"ids":[["a",4]]}"#,
            #"{"type":"opIds","seq":3,"part":1,"parts":1,"ids":[["a"]]}"#, #"{"type":"opIds","seq":3,"part":1,"parts":1,"ids":[[1,2]]}"#,
            #"{"type":"opIds","seq":3,"part":1,"parts":1,"ids":[["",2]]}"#,
        ] {
            guard case .failure(let e)? = decode(Array(text.utf8)) else { return XCTFail("accepted: \(text)") }
            XCTAssertEqual(e.code, .invalidMessage, text)
        }
        let good = #"{"type":"opIds","seq":3,"part":1,"parts":1,"ids":[["a",2],["b",3]]}"#
        XCTAssertEqual(
            try decode(Array(good.utf8))?.get(), .appliedIds(AppliedIdsPart(seq: 3, part: 1, parts: 1, ids: ["a": 2, "b": 3])))
        let encoded = AppliedIdsPart(seq: 3, part: 1, parts: 1, ids: ["b": 3, "a": 2]).encodedBytes()
        XCTAssertEqual(String(decoding: encoded, as: UTF8.self), good)
    }
}
