import RollupCore
import XCTest

/// The entry hash and the rolling hash: fixed vectors (a change of the canonical bytes breaks
/// every shop's chain at head office, so it must be deliberate), and what each field changes.
final class RollupHashTests: XCTestCase {
    static let entry = RollupEntry(
        seq: 1, term: 1, opId: "op-1", origin: "local", operation: 0,
        message: Array(#"{"operation":0,"orders":[{"uuid":"9437C8F5-D742-46CB-9847-737C5809392C","version":1}],"seq":1}"#.utf8),
        recordedAtMillis: 1_700_000_000_000)

    func testCanonicalBytesFrameEveryField() {
        let bytes = Self.entry.canonicalBytes
        XCTAssertEqual(Array(bytes.prefix(5)), Array("OSRJ1".utf8))
        // seq 1 as 8 bytes big-endian right after the tag
        XCTAssertEqual(Array(bytes[5..<13]), [0, 0, 0, 0, 0, 0, 0, 1])
        XCTAssertEqual(bytes.count, 5 + 8 * 2 + 1 + 1 + (4 + 4) + (4 + Self.entry.message.count))
    }

    /// Computed independently with Python's hashlib and struct from the layout documented on
    /// `RollupEntry.canonicalBytes` (Docs/OPERATIONS.md gives the same recipe).
    func testEntryHashVector() {
        XCTAssertEqual(
            RollupHash.hex(RollupHash.entry(Self.entry)), "d1c428cab0910af6404abb3343c803faf347aba4a523e7ecd3493fd22ecfd51d")
    }

    func testStartAndRollingVectors() {
        // SHA-256("OSRS1" + framed "shop1" + framed "L1"), and the chain step, computed with hashlib.
        let start = RollupHash.start(storeId: "shop1", lineage: "L1")
        XCTAssertEqual(RollupHash.hex(start), "6c206f1ab64c1b32be892938938dd1b84389351ab21c6e6c7edfad450b20ec21")
        let rolled = RollupHash.rolling(previous: start, hash: RollupHash.entry(Self.entry))
        XCTAssertEqual(RollupHash.hex(rolled), "ef7202e13e3a9c0ec9f4822533cbf4556e4798fad5c0d2db1c71e4948e142250")
    }

    func testEveryFieldChangesTheHash() {
        let base = RollupHash.entry(Self.entry)
        var variants: [RollupEntry] = []
        var e = Self.entry
        e.seq = 2; variants.append(e)
        e = Self.entry; e.term = 2; variants.append(e)
        e = Self.entry; e.opId = nil; variants.append(e)
        e = Self.entry; e.opId = ""; variants.append(e)
        e = Self.entry; e.operation = 1; variants.append(e)
        e = Self.entry; e.message[e.message.count - 2] = UInt8(ascii: "2"); variants.append(e)
        let hashes = variants.map(RollupHash.entry)
        for h in hashes { XCTAssertNotEqual(h, base) }
        XCTAssertEqual(Set(hashes.map(RollupHash.hex)).count, hashes.count)
    }

    func testEachCopysOwnNotesAreNotHashed() {
        // A standby records its own time of applying an entry: its copy hashes alike.
        var e = Self.entry
        e.recordedAtMillis += 1234
        e.origin = "till-2"
        XCTAssertEqual(RollupHash.entry(e), RollupHash.entry(Self.entry))
    }

    func testFramingKeepsFieldsApart() {
        // "ab" + "c" and "a" + "bc" in opId and message must not hash alike.
        var a = Self.entry
        a.opId = "ab"
        a.message = Array("c".utf8)
        var b = Self.entry
        b.opId = "a"
        b.message = Array("bc".utf8)
        XCTAssertNotEqual(RollupHash.entry(a), RollupHash.entry(b))
    }

    func testStartDependsOnStoreAndLineage() {
        XCTAssertNotEqual(RollupHash.start(storeId: "a", lineage: "b"), RollupHash.start(storeId: "a", lineage: "c"))
        XCTAssertNotEqual(RollupHash.start(storeId: "a\nb", lineage: "c"), RollupHash.start(storeId: "a", lineage: "b\nc"))
    }
}
