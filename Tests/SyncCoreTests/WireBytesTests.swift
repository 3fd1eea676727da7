import JSON
import XCTest

@testable import SyncCore

/// The master's hot path writes an order's JSON and its broadcast straight to bytes; these check
/// the bytes are exactly what the `JSONObject` path (`Order.json`, `ServerMessage.jsonObject()`)
/// gives, member for member.
final class WireBytesTests: XCTestCase {
    private var orders: [Order] {
        let created = OrderTimestamp(epochMillis: 1_452_605_716_000, offsetMinutes: 480)
        var extra = JSONObject()
        extra["loyaltyCard"] = .string("L-77")
        extra["tip"] = .double(1.25)
        extra["flags"] = .array([.bool(true), .null, .int(-3)])
        // Members named like known fields: left out where the order has the field, kept where not.
        var clashing = JSONObject()
        clashing["note"] = .string("from extra")
        clashing["tableSize"] = .int(4)
        clashing["status"] = .string("ignored")
        return [
            Order(uuid: "6F1C2A3B-0000-4000-8000-000000000001", customerName: "Guest 1 at the window", created: created),
            Order(
                uuid: "6f1c2a3b-0000-4000-8000-000000000002", customerName: "Zo\u{EB} \"Q\" \\ \u{2028} \u{01}",
                created: OrderTimestamp(epochMillis: -86_400_001, offsetMinutes: -330), shippingMethod: "pickup",
                tableName: "T\u{1F355}", tableSize: -1, extra: extra, version: 12, status: .completed,
                items: [
                    LineItem(sku: "A-1", name: "Tea", quantity: 2, unitPrice: 250),
                    LineItem(sku: nil, name: "Cake", quantity: 1, unitPrice: 0),
                ],
                note: "no nuts"),
            Order(uuid: "6F1C2A3B-0000-4000-8000-000000000003", customerName: "", created: created, tableName: "T3", extra: clashing),
            Order(
                uuid: "6F1C2A3B-0000-4000-8000-000000000004", customerName: "x", created: created, tableSize: 8, extra: clashing,
                version: Int64.max, note: "kept"),
        ]
    }

    func testAnOrdersBytesAreItsJSONObjectSerialized() {
        for order in orders {
            XCTAssertEqual(
                String(decoding: order.jsonBytes, as: UTF8.self), JSONValue.object(order.json).serialized(), order.uuid)
        }
    }

    func testTheBroadcastsBytesAreItsJSONObjectWithTheTermLast() {
        let all = orders
        for (operation, list, opId, origin) in [
            (OperationKind.create, [all[0]], nil, "10.0.0.1:5000"), (.update, all, "op-\u{E9}-1", "till-2 [ABCD-EFGH]@10.0.0.3:5555"),
            (.remove, [] as [Order], nil, nil), (.create, [all[1], all[3]], "op-2", nil),
        ] as [(OperationKind, [Order], String?, String?)] {
            for seq in [nil, 1, 9_000_000_000] as [Int64?] {
                let message = ServerMessage.applied(operation: operation, orders: list, seq: seq, opId: opId, origin: origin, snapshot: nil)
                var object = message.jsonObject()
                XCTAssertEqual(
                    String(decoding: message.encodedBytes(), as: UTF8.self), JSONValue.object(object).serialized())
                object["term"] = .int(7)
                XCTAssertEqual(
                    String(
                        decoding: ServerMessage.appliedBytes(
                            operation: operation, orders: list, seq: seq, opId: opId, origin: origin, term: 7), as: UTF8.self),
                    JSONValue.object(object).serialized())
            }
        }
    }

    func testAnAppliedPartOrSnapshotPartIsStillWrittenFromItsObject() {
        let part = ServerMessage.applied(
            operation: .create, orders: orders, seq: 5, opId: nil, origin: nil, snapshot: nil, part: BroadcastPart(part: 1, parts: 2))
        XCTAssertEqual(part.encodedBytes(), JSONValue.object(part.jsonObject()).serializedBytes())
        let snapshot = ServerMessage.applied(
            operation: .create, orders: orders, seq: nil, opId: nil, origin: nil,
            snapshot: SnapshotPart(seq: 5, part: 1, parts: 1, epoch: "e"))
        XCTAssertEqual(snapshot.encodedBytes(), JSONValue.object(snapshot.jsonObject()).serializedBytes())
    }
}
