import JSON
import WireTestSupport
import XCTest

@testable import SyncCore

/// A StorePOS app's connect sequence sends a Remove per order (Docs/PROTOCOL.md 4.2.1):
/// `SnapshotStream` writes those messages straight into a buffer, and they must be the bytes
/// the JSON serializer gives for the same members, whatever the uuid holds.
final class SnapshotRemoveEncodingTests: XCTestCase {
    /// What the serializer gives for a Remove of `uuids` numbered `part` of `parts`.
    private func reference(_ uuids: [String], seq: Int64, part: Int, parts: Int, epoch: String) -> [UInt8] {
        var snapshot = JSONObject()
        snapshot["seq"] = .int(seq)
        snapshot["part"] = .int(Int64(part))
        snapshot["parts"] = .int(Int64(parts))
        snapshot["epoch"] = .string(epoch)
        var message = JSONObject()
        message["operation"] = .int(2)
        message["orders"] = .array(uuids.map { .object(JSONObject([("uuid", .string($0))])) })
        message["snapshot"] = .object(snapshot)
        return JSONValue.object(message).serializedBytes()
    }

    func testEveryRemoveAndFenceIsWhatTheSerializerWrites() {
        let orders = (0..<3).map {
            Order(uuid: "9437C8F5-D742-46CB-9847-00000000000\($0)", customerName: "c", created: .init(epochMillis: Int64($0)))
        }
        // Removed orders as first written: escapes, non-ASCII and the separators JavaScript needs escaped.
        let odd = [#"quo"te\back"#, "caf\u{E9}-\u{2028}-\u{2029}", "tab\tnew\nline\u{1}"]
        let epoch = #"ep"och\1"#
        var stream = SnapshotStream(
            orders: orders, seq: 1_234_567_890_123, chunk: 2, epoch: epoch, storeId: "s", sendsReady: false,
            clearing: orders.map(\.uuid) + odd, fence: 2)
        let parts = stream.allParts()
        XCTAssertEqual(parts.count, 6 + 2 + 2 + 2, "the Removes, a fence, two Creates, a fence")
        let removed = orders.map(\.uuid) + odd
        for (k, bytes) in parts.enumerated() {
            let part = k + 1
            if k < 6 {
                XCTAssertEqual(bytes.text, reference([removed[k]], seq: 1_234_567_890_123, part: part, parts: 12, epoch: epoch).text)
            } else if k < 8 || k >= 10 {
                XCTAssertEqual(bytes.text, reference([], seq: 1_234_567_890_123, part: part, parts: 12, epoch: epoch).text)
            } else {
                XCTAssertTrue(bytes.text.hasPrefix(#"{"operation":0,"orders":[{"uuid":"9437C8F5"#), bytes.text)
            }
        }
        // And they read back as the uuids themselves.
        let back = parts.prefix(6).compactMap {
            (try? JSONParser.parse($0))?.objectValue?["orders"]?.arrayValue?.first?.objectValue?["uuid"]?.stringValue
        }
        XCTAssertEqual(back, removed)
    }

    /// The Create parts too are what `ServerMessage.encodedBytes()` writes through a
    /// `JSONObject`, with and without an epoch; a last part with `applied` goes that way itself.
    func testEveryCreatePartIsWhatTheSerializerWrites() throws {
        let orders = [
            Order(uuid: "A-1", customerName: #"Kev"in\"#, created: .init(epochMillis: 1_452_605_716_000, offsetMinutes: 480)),
            Order(
                uuid: "b-2", customerName: "caf\u{E9}\u{2028}", created: .init(epochMillis: 5), shippingMethod: "DHL",
                tableName: "T4", tableSize: -1, extra: JSONObject([("color", .string("red")), ("n", .int(3))]), version: 7,
                status: .open, items: [LineItem(name: "tea", quantity: 2, unitPrice: 350)], note: "no\nsugar"),
        ]
        for epoch in [nil, "e\"1"] {
            for applied in [[:], ["op-1": Int64(4)]] {
                let part = SnapshotPart(seq: 41, part: 3, parts: 9, epoch: epoch, applied: applied)
                let message = ServerMessage.applied(operation: .create, orders: orders, seq: nil, opId: nil, origin: nil, snapshot: part)
                let reference = JSONValue.object(message.jsonObject()).serializedBytes()
                if applied.isEmpty {
                    XCTAssertEqual(try XCTUnwrap(ServerMessage.snapshotCreateBytes(orders: orders, part: part)).text, reference.text)
                } else {
                    XCTAssertNil(ServerMessage.snapshotCreateBytes(orders: orders, part: part))
                }
                XCTAssertEqual(message.encodedBytes().text, reference.text)
            }
        }
    }
}
