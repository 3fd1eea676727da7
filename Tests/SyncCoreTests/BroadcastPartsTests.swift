import JSON
import WireTestSupport
import XCTest

@testable import SyncCore

/// A broadcast larger than the part bound goes out in parts cut by bytes at order boundaries;
/// each part is a complete applied message, and bad part members are refused.
final class BroadcastPartsTests: XCTestCase {
    /// `count` orders whose unknown member makes each about `bytes` bytes of JSON.
    private func orders(_ count: Int, bytes: Int) -> [Order] {
        (0..<count).map { i in
            var o = Order(
                uuid: String(format: "6f1c2a0e-6a57-4d1c-9a4e-%012d", i), customerName: "guest \(i)",
                created: OrderTimestamp(epochMillis: 1_700_000_000_000))
            o.note = "table by the window"
            o.extra = JSONObject([("x-ticket", .string(String(repeating: "t", count: bytes - 250)))])
            o.version = 2
            return o
        }
    }

    private struct NotAPart: Error {}

    private func decodedPart(_ bytes: [UInt8]) throws -> (orders: [Order], seq: Int64?, opId: String?, part: BroadcastPart?) {
        guard case .success(.applied(.update, let orders, let seq, let opId, let origin, nil, let part)) = ServerMessage.decode(bytes),
            origin == "till-1"
        else {
            XCTFail("not an applied update from till-1: \(bytes.text.prefix(200))")
            throw NotAPart()
        }
        return (orders, seq, opId, part)
    }

    func testASmallBroadcastIsOneMessageWithoutPartMembers() throws {
        let list = orders(10, bytes: 1000)
        let texts = BroadcastParts.messages(
            operation: .update, orders: list, seq: 7, opId: "op-1", origin: "till-1", partBytes: 1 << 20)
        XCTAssertEqual(texts.count, 1)
        XCTAssertEqual(
            texts[0],
            ServerMessage.applied(operation: .update, orders: list, seq: 7, opId: "op-1", origin: "till-1", snapshot: nil).encodedBytes())
        XCTAssertFalse(texts[0].text.contains("\"parts\""))
    }

    func testALargeBroadcastIsSplitByBytesAtOrderBoundariesEveryPartWithinTheBound() throws {
        let list = orders(818, bytes: 15_000) // about 12.3 MB, as the bulk edit of the field report
        let bound = 1 << 20
        let texts = BroadcastParts.messages(operation: .update, orders: list, seq: 42, opId: "op-bulk", origin: "till-1", partBytes: bound)
        let whole = ServerMessage.applied(operation: .update, orders: list, seq: 42, opId: "op-bulk", origin: "till-1", snapshot: nil)
            .encoded().utf8.count
        XCTAssertGreaterThan(texts.count, whole / bound, "no part over the bound")
        XCTAssertLessThanOrEqual(texts.count, whole / bound + 2, "parts are filled, not one order each")
        var all: [Order] = []
        for (k, text) in texts.enumerated() {
            XCTAssertLessThanOrEqual(text.count, bound, "part \(k + 1)")
            let p = try decodedPart(text)
            XCTAssertEqual(p.seq, 42)
            XCTAssertEqual(p.opId, "op-bulk")
            XCTAssertEqual(p.part, BroadcastPart(part: k + 1, parts: texts.count))
            XCTAssertFalse(p.orders.isEmpty)
            all += p.orders
        }
        XCTAssertEqual(all, list, "every order once, in order")
    }

    func testPartsCutFromTheJournalTextMatchThePartsCutFromTheOrders() {
        let list = orders(100, bytes: 15_000)
        let text = ServerMessage.applied(operation: .remove, orders: list, seq: 3, opId: nil, origin: "10.0.0.9", snapshot: nil)
            .encodedBytes()
        let fromOrders = BroadcastParts.messages(
            operation: .remove, orders: list, seq: 3, opId: nil, origin: "10.0.0.9", partBytes: 256 << 10)
        XCTAssertGreaterThan(fromOrders.count, 1)
        XCTAssertEqual(BroadcastParts.messages(of: text, partBytes: 256 << 10), fromOrders)
        XCTAssertEqual(BroadcastParts.messages(of: text, partBytes: 16 << 20), [text], "one message when it fits")
    }

    func testAPlainStorePOSAppSeesEachPartAsAnOrdinaryBroadcast() throws {
        let texts = BroadcastParts.messages(
            operation: .update, orders: orders(40, bytes: 15_000), seq: 9, opId: "op-2", origin: "till-1", partBytes: 128 << 10)
        for text in texts {
            guard case .object(let o) = try JSONParser.parse(text) else { return XCTFail("not an object") }
            XCTAssertEqual(o.keys.prefix(2), ["operation", "orders"], "the StorePOS members come first")
            XCTAssertNil(o["type"], "an applied message has no type")
        }
    }

    func testBadPartMembersAreRefused() {
        let base = #"{"operation":1,"orders":[],"seq":5"#
        for bad in [
            #","part":0,"parts":2}"#, #","part":3,"parts":2}"#, #","part":1}"#, #","parts":2}"#,
            #","part":1,"parts":\#(BroadcastPart.maxParts + 1)}"#, #","part":"1","parts":2}"#,
        ] {
            guard case .failure(let e) = ServerMessage.decode(base + bad) else { return XCTFail("accepted \(bad)") }
            XCTAssertEqual(e.code, .invalidMessage, bad)
        }
        let noSeq = #"{"operation":1,"orders":[],"part":1,"parts":2}"#
        guard case .failure = ServerMessage.decode(noSeq) else { return XCTFail("a part without seq was accepted") }
        let snapshot = #"{"operation":0,"orders":[],"seq":5,"part":1,"parts":2,"snapshot":{"seq":5,"part":1,"parts":1}}"#
        guard case .failure = ServerMessage.decode(snapshot) else { return XCTFail("a snapshot part with part members was accepted") }
        guard case .success(.applied(_, _, let seq, _, _, nil, let part)) = ServerMessage.decode(base + #","part":2,"parts":2}"#) else {
            return XCTFail("a good part was refused")
        }
        XCTAssertEqual(seq, 5)
        XCTAssertEqual(part, BroadcastPart(part: 2, parts: 2))
    }
}
