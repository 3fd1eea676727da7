import JSON
import XCTest

@testable import SyncCore

final class ChangeFeedTests: XCTestCase {
    let u1 = "9437C8F5-D742-46CB-9847-737C5809392C"

    func order(_ name: String, version: Int64 = 1, items: [LineItem]? = nil) -> Order {
        var o = Order(uuid: u1, customerName: name, created: OrderTimestamp(epochMillis: 1_700_000_000_000))
        o.version = version
        o.items = items
        return o
    }

    func testTheCursorRule() {
        let e = "epoch-a"
        XCTAssertEqual(ChangeFeed.check(since: 0, epoch: nil, nodeEpoch: e, oldest: 0, last: 0), .ok)
        XCTAssertEqual(ChangeFeed.check(since: 3, epoch: e, nodeEpoch: e, oldest: 3, last: 9), .ok)
        XCTAssertEqual(ChangeFeed.check(since: 9, epoch: nil, nodeEpoch: e, oldest: 3, last: 9), .ok)
        for (since, epoch) in [(2, nil), (10, nil), (5, "epoch-b")] as [(Int64, String?)] {
            guard case .resnapshotRequired = ChangeFeed.check(since: since, epoch: epoch, nodeEpoch: e, oldest: 3, last: 9) else {
                return XCTFail("cursor \(since) \(epoch ?? "-") must need a snapshot")
            }
        }
    }

    func testAJournalEntryIsReplayedAsItsBroadcastCarriedIt() throws {
        let text = ServerMessage.applied(
            operation: .update, orders: [order("Then", version: 2)], seq: 7, opId: "op-7", origin: "till", snapshot: nil
        ).encodedBytes()
        let entry = JournalEntry(
            seq: 7, opId: "op-7", origin: "till-2 [ABCD-EFGH]@10.0.0.2", operation: .update, orderUUIDs: [u1], message: text,
            recordedAtMillis: 1_795_618_800_123)
        let change = ChangeFeed.masterChange(entry)
        let line = ChangeFeed.changeText(seq: 7, change)
        XCTAssertTrue(line.hasPrefix("{\"seq\":7,\"operation\":\"update\",\"orders\":[{"), line)
        let parsed = try XCTUnwrap(JSONParser.parse(Array(line.utf8)).objectValue)
        XCTAssertEqual(parsed["orders"]?.arrayValue?.first?.objectValue?["customerName"], .string("Then"))
        XCTAssertEqual(parsed["orders"]?.arrayValue?.first?.objectValue?["version"], .int(2))
        XCTAssertEqual(parsed["origin"], .string("till-2 [ABCD-EFGH]@10.0.0.2"))
        XCTAssertEqual(parsed["at"], .string("2026-11-25T15:00:00.123Z"))
        XCTAssertEqual(parsed["opId"], .string("op-7"))
    }

    func testARemovalIsATombstone() {
        let entry = JournalEntry(
            seq: 8, opId: nil, origin: "x", operation: .remove, orderUUIDs: [u1],
            message: ServerMessage.applied(
                operation: .remove, orders: [order("Gone", version: 4)], seq: 8, opId: nil, origin: nil, snapshot: nil
            )
            .encodedBytes(), recordedAtMillis: 0)
        let c = ChangeFeed.masterChange(entry)
        XCTAssertEqual(c["orders"], .array([.object(JSONObject([("uuid", .string(u1)), ("removed", .bool(true)), ("version", .int(4))]))]))
        XCTAssertEqual(c["opId"], .null)
        XCTAssertEqual(c["at"], .string("1970-01-01T00:00:00.000Z"))
    }

    func testSlaveEventsAndTheSplicedSeq() throws {
        let pending = SlaveFeedEvent.pending(operation: .create, changes: [.insert(order("Offline"))], opId: "op-1", origin: "t1")
        let stored = JSONValue.object(pending.json(at: 0)).serialized()
        let line = ChangeFeed.changeText(seq: 12, storedBody: stored)
        let o = try XCTUnwrap(JSONParser.parse(Array(line.utf8)).objectValue)
        XCTAssertEqual(o.keys.first, "seq")
        XCTAssertEqual(o["seq"], .int(12))
        XCTAssertEqual(o["pending"], .bool(true))
        XCTAssertEqual(ChangeFeed.changeText(seq: 3, storedBody: "{}"), "{\"seq\":3}")

        let synced = SlaveFeedEvent.outcome(opId: "op-1", masterSeq: 40, applied: [order("Offline")], errors: []).json(at: 0)
        XCTAssertEqual(synced["outcome"], .string("synced"))
        XCTAssertEqual(synced["masterSeq"], .int(40))
        let refused = SlaveFeedEvent.outcome(
            opId: "op-2", masterSeq: nil, applied: [], errors: [WireError(.conflict, "version 1 is not current", uuid: u1)]
        ).json(at: 0)
        XCTAssertEqual(refused["outcome"], .string("rejected"))
        XCTAssertEqual(refused["error"]?.objectValue?["code"], .string("conflict"))
        let snap = SlaveFeedEvent.snapshot(masterSeq: 9, epoch: "e", orders: 3).json(at: 0)
        XCTAssertEqual(snap["operation"], .string("snapshot"))
    }

    func testServerSentEventFraming() {
        XCTAssertEqual(ChangeFeed.sseEvent(seq: 4, changeText: "{\"seq\":4}"), "id: 4\nevent: change\ndata: {\"seq\":4}\n\n")
        // Serialized JSON never holds a raw line break, so one data line carries it.
        let text = ChangeFeed.changeText(seq: 1, JSONObject([("note", .string("a\nb\r\nc"))]))
        XCTAssertFalse(text.contains("\n") || text.contains("\r"))
    }

    func testCSVFieldsFollowRFC4180() {
        XCTAssertEqual(OrderExport.csvField("plain"), "plain")
        XCTAssertEqual(OrderExport.csvField("a,b"), "\"a,b\"")
        XCTAssertEqual(OrderExport.csvField("say \"hi\""), "\"say \"\"hi\"\"\"")
        XCTAssertEqual(OrderExport.csvField("two\nlines"), "\"two\nlines\"")
        XCTAssertEqual(OrderExport.csvField("東京"), "東京")
        XCTAssertEqual(OrderExport.csvLine(["a", "", "b"]), "a,,b\r\n")
    }

    func testTextThatStartsLikeAFormulaIsShownAsText() {
        for formula in ["=HYPERLINK(\"http://x\",\"y\")", "+1+1", "-2+3", "@SUM(A1)", "\tx", "\rx"] {
            XCTAssertEqual(OrderExport.cellText(formula), "'" + formula, formula)
        }
        for plain in ["Ann", "", "Table = 7", " =padded", "'quoted", "１"] {
            XCTAssertEqual(OrderExport.cellText(plain), plain, plain)
        }
        let o = order("=cmd|' /C calc'!A0", items: [LineItem(sku: "@X", name: "+Tea", quantity: 1, unitPrice: -250)])
        let row = OrderExport.csvRows(o, .orders)
        XCTAssertTrue(row.contains(",'=cmd|' /C calc'!A0,"), row)
        // Money and counts are ours: a refund stays a negative number.
        XCTAssertTrue(row.hasSuffix(",1,1,-250,-2.50,1\r\n"), row)
        XCTAssertTrue(OrderExport.csvRows(o, .items).contains(",1,'@X,'+Tea,1,-250,-2.50,-250,-2.50\r\n"))
    }

    func testMoneyInMinorUnitsAndFormatted() {
        XCTAssertEqual(OrderExport.money(1234), "12.34")
        XCTAssertEqual(OrderExport.money(5), "0.05")
        XCTAssertEqual(OrderExport.money(0), "0.00")
        XCTAssertEqual(OrderExport.money(-105), "-1.05")
        let o = order(
            "Ann", items: [LineItem(name: "Tea", quantity: 3, unitPrice: 250), LineItem(name: "Cake, big", quantity: 1, unitPrice: 399)])
        XCTAssertEqual(OrderExport.totalCents(o), 1149)
        let row = OrderExport.csvRows(o, .orders)
        XCTAssertTrue(row.hasSuffix(",2,4,1149,11.49,1\r\n"), row)
        let items = OrderExport.csvRows(o, .items)
        XCTAssertEqual(items.components(separatedBy: "\r\n").count, 3)
        XCTAssertTrue(items.contains(",2,,\"Cake, big\",1,399,3.99,399,3.99\r\n"), items)
        XCTAssertEqual(OrderExport.csvRows(order("No items"), .items), "")
        XCTAssertEqual(OrderExport.jsonObject(o)["total"], .string("11.49"))
    }
}
