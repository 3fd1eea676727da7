import PostgresClient
import RollupCore
import XCTest

@testable import OrderSyncNode

/// The rows a batch goes to head office as (`RollupShipment`, `PostgresCopyText`): COPY's text
/// format byte for byte, every character COPY would take for a delimiter escaped, NULL as `\N`,
/// one row per entry and one per order left behind by the batch.
final class RollupShipmentTests: XCTestCase {
    func testCopyTextEscapesDelimitersAndBackslashesAndWritesNullAsBackslashN() {
        var copy = PostgresCopyText()
        copy.text("a\tb\nc\rd\\e\"f")
        copy.text(nil)
        copy.int(-42)
        copy.int(nil)
        copy.bool(true)
        copy.bytea([0x00, 0xab, 0x0f])
        copy.endRow()
        copy.bool(false)
        copy.bytea(nil)
        copy.endRow()
        XCTAssertEqual(
            String(decoding: copy.bytes, as: UTF8.self),
            "a\\tb\\nc\\rd\\\\e\"f\t\\N\t-42\t\\N\tt\t\\\\x00ab0f\nf\t\\N\n")
        XCTAssertEqual(copy.rows, 2)
    }

    func testCopyTextKeepsUnicodeAsItsUTF8() {
        var copy = PostgresCopyText()
        copy.text("Zoë 🍕")
        copy.endRow()
        XCTAssertEqual(copy.bytes, Array("Zoë 🍕\n".utf8))
    }

    func testAShipmentHasAJournalRowPerEntryAndAnOrderRowPerOrderLeftBehind() throws {
        let a = "5F0C0000-0000-4000-8000-000000000001"
        let b = "5F0C0000-0000-4000-8000-000000000002"
        let entries = [
            // A real line break between two members (JSON whitespace) and a JSON escape (`\t`).
            entry(
                1, 0, #"{"type":"broadcast","#, "\n", #""orders":[{"uuid":"\#(a)","version":1,"customerName":"Ann\tLee","#,
                #""tableSize":4,"items":[{"sku":"x"}]}]}"#),
            entry(2, 0, #"{"type":"broadcast","orders":[{"uuid":"\#(b)","version":1,"customerName":"Bo"}]}"#),
            entry(3, 1, #"{"type":"broadcast","orders":[{"uuid":"\#(a)","version":2,"customerName":"Ann","note":"line\nbreak"}]}"#),
            entry(4, 2, #"{"type":"broadcast","orders":[{"uuid":"\#(b)","version":1}]}"#),
        ]
        let batch = try XCTUnwrap(RollupBatch(entries: entries, after: 0, rolling: RollupHash.start(storeId: "s1", lineage: "L")))
        let shipment = RollupShipment(batch)

        let journal = lines(shipment.journalRows)
        XCTAssertEqual(journal.count, 4)
        XCTAssertEqual(shipment.journalRows.rows, 4)
        let first = journal[0].split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        XCTAssertEqual(first.count, 9)
        XCTAssertEqual(Array(first[0..<5]), ["1", "7", "op-1", "local", "0"])
        // The message as journalled: its line break as `\n`, its backslash doubled; 9 columns still.
        XCTAssertTrue(first[5].hasPrefix(#"{"type":"broadcast",\n"orders""#), first[5])
        XCTAssertTrue(first[5].contains(#"Ann\\tLee"#), first[5])
        XCTAssertEqual(first[6], "1001")
        XCTAssertEqual(first[7], "\\\\x" + hex(batch.rows[0].hash))
        XCTAssertEqual(first[8], "\\\\x" + hex(batch.rows[0].rolling))

        // a: its last state (version 2, seq 3); b: removed at seq 4.
        let orders = lines(shipment.orderRows).map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
        XCTAssertEqual(orders.count, 2)
        XCTAssertEqual([shipment.liveOrders, shipment.removedOrders], [1, 1])
        XCTAssertEqual(orders[0].count, 12)
        XCTAssertEqual(orders[0][0], a.lowercased())
        XCTAssertEqual(Array(orders[0][1...7]), ["Ann", "\\N", "\\N", "\\N", "\\N", "\\N", "line\\nbreak"])
        XCTAssertEqual(Array(orders[0][9...11]), ["2", "f", "3"])
        XCTAssertEqual(orders[1][0], b.lowercased())
        XCTAssertEqual(Array(orders[1][9...11]), ["1", "t", "4"])
    }

    private func entry(_ seq: Int64, _ operation: Int, _ message: String...) -> RollupEntry {
        RollupEntry(
            seq: seq, term: 7, opId: "op-\(seq)", origin: "local", operation: operation, message: Array(message.joined().utf8),
            recordedAtMillis: 1000 + seq)
    }

    private func lines(_ copy: PostgresCopyText) -> [String] {
        String(decoding: copy.bytes, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    private func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
}
