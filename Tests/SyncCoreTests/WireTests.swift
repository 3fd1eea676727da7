import JSON
import WireTestSupport
import XCTest

@testable import SyncCore

final class WireTests: XCTestCase {
    let u1 = "9437C8F5-D742-46CB-9847-737C5809392C"
    let u2 = "E1CF0738-9400-4335-98AD-F882096C23C1"
    let now = OrderTimestamp(epochMillis: 1_700_000_000_000)

    func testDecodesTheStorePOSExample() throws {
        let text = """
            {"operation":0,"orders":[{"uuid":"\(u1)","customerName":"Kevin","created":"2016-01-12T21:35:16+0800",
            "shippingMethod":"DHL","tableSize":-1},{"uuid":"\(u2)","customerName":"Kevin",
            "created":"2016-01-09T22:41:37+0800","shippingMethod":"DHL","tableSize":-1}]}
            """
        guard case .success(.operation(let m)) = ClientMessage.decode(text) else { return XCTFail("not decoded") }
        XCTAssertEqual(m.operation, .create)
        let plan = OperationPlanner.plan(m, now: now) { _ in nil }
        XCTAssertEqual(plan.errors, [])
        XCTAssertEqual(plan.changes.count, 2)
        let o = plan.changes[0].order
        XCTAssertEqual(o.customerName, "Kevin")
        XCTAssertEqual(o.tableSize, -1)
        XCTAssertNil(o.tableName)
        XCTAssertEqual(o.json["created"], .string("2016-01-12T21:35:16+0800"))
    }

    func testMessageLevelErrors() {
        func code(_ t: String) -> WireErrorCode? {
            if case .failure(let e) = ClientMessage.decode(t) { return e.code }
            return nil
        }
        XCTAssertEqual(code("{not json"), .malformedJSON)
        XCTAssertEqual(code("[1,2]"), .invalidMessage)
        XCTAssertEqual(code(#"{"orders":[]}"#), .invalidMessage)
        XCTAssertEqual(code(#"{"operation":7,"orders":[]}"#), .unknownOperation)
        XCTAssertEqual(code(#"{"operation":"0","orders":[]}"#), .unknownOperation)
        XCTAssertEqual(code(#"{"operation":true,"orders":[]}"#), .unknownOperation)
        XCTAssertEqual(code(#"{"operation":1.5,"orders":[]}"#), .unknownOperation)
        XCTAssertEqual(code(#"{"operation":0,"orders":{}}"#), .invalidMessage)
        XCTAssertEqual(code(#"{"type":"bogus"}"#), .invalidMessage)
    }

    func testPerOrderErrorsRejectOnlyThatOrder() {
        let m = OperationMessage(
            operation: .create,
            orders: [
                .object(JSONObject([("uuid", .string(u1)), ("customerName", .string("A"))])),
                .object(JSONObject([("uuid", .string("not-a-uuid"))])),
                .object(JSONObject([("customerName", .string("no uuid"))])),
                .object(JSONObject([("uuid", .string(u2)), ("tableSize", .string("four"))])),
                .string("x"),
            ])
        let plan = OperationPlanner.plan(m, now: now) { _ in nil }
        XCTAssertEqual(plan.changes.map(\.order.uuid), [u1])
        XCTAssertEqual(plan.errors.map(\.code), [.invalidUUID, .invalidUUID, .invalidField, .invalidMessage])
        XCTAssertEqual(plan.errors[2].uuid, u2)
        XCTAssertEqual(plan.errors.map(\.index), [1, 2, 3, 4])
    }

    func testUpdateKeepsFieldsItDoesNotCarry() throws {
        let stored = Order(
            uuid: u1, customerName: "Kevin", created: now, shippingMethod: "DHL", tableName: "T4",
            tableSize: 4, version: 3)
        let m = OperationMessage(
            operation: .update,
            orders: [
                .object(JSONObject([("uuid", .string(u1.lowercased())), ("tableSize", .int(6)), ("allergy", .string("nuts"))]))
            ])
        let plan = OperationPlanner.plan(m, now: now) { $0.lowercased() == stored.key ? stored : nil }
        guard case .update(let o) = try XCTUnwrap(plan.changes.first) else { return XCTFail() }
        XCTAssertEqual(o.customerName, "Kevin")
        XCTAssertEqual(o.shippingMethod, "DHL")
        XCTAssertEqual(o.tableName, "T4")
        XCTAssertEqual(o.tableSize, 6)
        XCTAssertEqual(o.version, 4)
        XCTAssertEqual(o.uuid, u1, "the stored spelling of the uuid is kept")
        XCTAssertEqual(o.extra["allergy"], .string("nuts"))
    }

    func testCreateRepeatAndConflict() {
        let stored = Order(uuid: u1, customerName: "Kevin", created: OrderTimestamp(parsing: "2016-01-12T21:35:16+0800")!)
        let same = OperationMessage(
            operation: .create,
            orders: [
                .object(
                    JSONObject([
                        ("uuid", .string(u1)), ("customerName", .string("Kevin")), ("created", .string("2016-01-12T13:35:16Z")),
                    ]))
            ])
        var plan = OperationPlanner.plan(same, now: now) { _ in stored }
        // Same instant, different offset: not identical content.
        XCTAssertEqual(plan.errors.map(\.code), [.alreadyExists])
        let exact = OperationMessage(
            operation: .create,
            orders: [
                .object(
                    JSONObject([
                        ("uuid", .string(u1)), ("customerName", .string("Kevin")), ("created", .string("2016-01-12T21:35:16+0800")),
                    ]))
            ])
        plan = OperationPlanner.plan(exact, now: now) { _ in stored }
        XCTAssertEqual(plan.errors, [])
        XCTAssertEqual(plan.unchanged.count, 1)
        XCTAssertEqual(plan.changes, [])
    }

    func testUnknownOrderOnUpdateAndRemove() {
        for op in [OperationKind.update, .remove] {
            let m = OperationMessage(operation: op, orders: [.object(JSONObject([("uuid", .string(u1))]))])
            let plan = OperationPlanner.plan(m, now: now) { _ in nil }
            XCTAssertEqual(plan.errors.first?.code, .notFound)
            XCTAssertEqual(plan.errors.first?.uuid, u1)
        }
    }

    func testSameMessageCreateThenRemove() {
        let m1 = OperationMessage(
            operation: .create,
            orders: [
                .object(JSONObject([("uuid", .string(u1))])), .object(JSONObject([("uuid", .string(u1))])),
            ])
        let plan = OperationPlanner.plan(m1, now: now) { _ in nil }
        XCTAssertEqual(plan.changes.count, 1)
        XCTAssertEqual(plan.unchanged.count, 1)
    }

    func testSQLLookingTextIsJustText() {
        let evil = "Robert'); DROP TABLE orders;--"
        let m = OperationMessage(
            operation: .create,
            orders: [
                .object(
                    JSONObject([
                        ("uuid", .string(u1)), ("customerName", .string(evil)),
                    ]))
            ])
        let plan = OperationPlanner.plan(m, now: now) { _ in nil }
        XCTAssertEqual(plan.changes.first?.order.customerName, evil)
    }

    func testServerMessagesRoundTrip() {
        let o = Order(
            uuid: u1, customerName: "K", created: now, shippingMethod: "DHL", tableSize: -1,
            extra: JSONObject([("allergy", .string("x"))]), version: 2)
        let msgs: [ServerMessage] = [
            .applied(operation: .update, orders: [o], seq: 7, opId: "op-1", origin: "t1", snapshot: nil),
            .applied(
                operation: .create, orders: [o], seq: nil, opId: nil, origin: nil,
                snapshot: SnapshotPart(seq: 9, part: 1, parts: 2, epoch: "e")),
            .ready(seq: 9, epoch: "e", store: "s"),
            .error(WireError(.notFound, "nope", uuid: u1, index: 0), opId: "op-2", operation: .remove),
            .result(opId: "op-3", seq: 10, applied: 1, unchanged: 0, failed: 2),
            .heartbeat(seq: 12),
        ]
        for m in msgs {
            XCTAssertEqual(try ServerMessage.decode(m.encoded()).get(), m)
        }
    }

    func testHelloRoundTrip() {
        let h = HelloMessage(terminalId: "t", terminalName: "Bar", store: "s", lastSeq: 5, epoch: "e")
        XCTAssertEqual(try ClientMessage.decode(h.encoded()).get(), .hello(h))
        XCTAssertEqual(try ClientMessage.decode(ClientMessage.encodeAck(seq: 9)).get(), .ack(seq: 9, outbox: nil))
        if case .success = ClientMessage.decode(#"{"type":"ack","seq":-1}"#) { XCTFail("negative ack accepted") }
    }

    func testAnIntegralOperationWrittenWithAFractionIsThatOperation() throws {
        guard case .operation(let m) = try ClientMessage.decode(#"{"operation":1.0,"orders":[]}"#).get() else { return XCTFail() }
        XCTAssertEqual(m.operation, .update)
        guard case .failure(let e) = ClientMessage.decode(#"{"operation":1.5,"orders":[]}"#) else { return XCTFail("1.5 accepted") }
        XCTAssertEqual(e.code, .unknownOperation)
    }

    func testAckAndHelloCarryTheOutboxCountAndBadCountsAreRefused() {
        XCTAssertEqual(ClientMessage.encodeAck(seq: 9, outbox: 3).text, #"{"type":"ack","seq":9,"outbox":3}"#)
        XCTAssertEqual(try ClientMessage.decode(ClientMessage.encodeAck(seq: 9, outbox: 3)).get(), .ack(seq: 9, outbox: 3))
        // An ack without it (StorePOS never acks; an older slave) is still an ack.
        XCTAssertEqual(try ClientMessage.decode(#"{"type":"ack","seq":4}"#).get(), .ack(seq: 4, outbox: nil))
        var h = HelloMessage(terminalId: "t", terminalName: "Bar", store: "s", lastSeq: 5, epoch: "e")
        h.outbox = 7012
        XCTAssertTrue(h.encoded().contains(#""outbox":7012"#), h.encoded())
        XCTAssertEqual(try ClientMessage.decode(h.encoded()).get(), .hello(h))
        for bad in [
            #"{"type":"ack","seq":1,"outbox":-1}"#, #"{"type":"ack","seq":1,"outbox":"3"}"#, #"{"type":"ack","seq":1,"outbox":1.5}"#,
            #"{"type":"ack","seq":1,"outbox":null}"#, #"{"type":"hello","terminal":"t","outbox":[]}"#,
            #"{"type":"ack","seq":1,"outbox":99999999999}"#,
        ] {
            guard case .failure(let e) = ClientMessage.decode(bad) else { return XCTFail("accepted \(bad)") }
            XCTAssertEqual(e.code, .invalidMessage, bad)
            XCTAssertTrue(e.message.contains("\"outbox\" must be an integer of 0 or more"), e.message)
        }
    }

    func testHelloListsPendingOperationIdsAndTheSnapshotSaysWhichItHolds() {
        var h = HelloMessage(terminalId: "t", terminalName: "Bar", store: "s", lastSeq: 5, epoch: "e")
        h.pending = ["op-1", "op-2"]
        XCTAssertTrue(h.encoded().contains(#""pending":["op-1","op-2"]"#), h.encoded())
        XCTAssertEqual(try ClientMessage.decode(h.encoded()).get(), .hello(h))
        for bad in [
            #"{"type":"hello","terminal":"t","pending":"op-1"}"#, #"{"type":"hello","terminal":"t","pending":[1]}"#,
            #"{"type":"hello","terminal":"t","pending":[""]}"#,
        ] {
            guard case .failure(let e) = ClientMessage.decode(bad) else { return XCTFail("accepted \(bad)") }
            XCTAssertEqual(e.code, .invalidMessage)
            XCTAssertTrue(e.message.contains("pending"), e.message)
        }
        var o = JSONObject([("type", .string("hello")), ("terminal", .string("t"))])
        o["pending"] = .array((0...HelloMessage.maxPending).map { .string("op-\($0)") })
        if case .success = ClientMessage.decode(JSONValue.object(o).serialized()) {
            XCTFail("a hello with more pending ids than the limit was accepted")
        }
        let part = ServerMessage.applied(
            operation: .create, orders: [], seq: nil, opId: nil, origin: nil,
            snapshot: SnapshotPart(seq: 9, part: 1, parts: 1, epoch: "e", applied: ["op-2": 7]))
        XCTAssertTrue(part.encoded().contains(#""applied":{"op-2":7}"#), part.encoded())
        XCTAssertEqual(try ServerMessage.decode(part.encoded()).get(), part)
    }
}
