import Foundation
import JSON
import SyncCore
import XCTest

@testable import OrderStore

final class OrderTests: StoreTestCase {
    func testInsertGetUpdateDelete() throws {
        let db = try openDatabase()
        var order = makeOrder("6F9619FF-8B86-D011-B42D-00C04FC964FF")
        XCTAssertNil(try db.order(uuid: order.uuid))
        try db.insertOrder(order)
        XCTAssertEqual(try db.order(uuid: order.uuid), order)
        XCTAssertEqual(try db.orderCount(), 1)

        order.customerName = "Grace"
        order.tableSize = nil
        order.shippingMethod = nil
        order.version = 2
        try db.updateOrder(order)
        let updated = try XCTUnwrap(db.order(uuid: order.uuid))
        XCTAssertEqual(updated, order)
        XCTAssertNil(updated.tableSize)
        XCTAssertNil(updated.shippingMethod)
        XCTAssertEqual(updated.version, 2)

        try db.deleteOrder(uuid: order.uuid)
        XCTAssertNil(try db.order(uuid: order.uuid))
        XCTAssertEqual(try db.orderCount(), 0)
    }

    func testDuplicateAndNotFound() throws {
        let db = try openDatabase()
        let order = makeOrder("6f9619ff-8b86-d011-b42d-00c04fc964ff")
        try db.insertOrder(order)

        var sameKey = makeOrder("6F9619FF-8B86-D011-B42D-00C04FC964FF", customer: "Other")
        let duplicate = assertStoreError(.duplicate) { try db.insertOrder(sameKey) }
        XCTAssertEqual(duplicate?.primaryCode, 19, "SQLITE_CONSTRAINT")
        XCTAssertNotNil(duplicate?.code)
        XCTAssertTrue(duplicate?.sql?.contains("INSERT INTO orders") ?? false)
        XCTAssertEqual(try db.order(uuid: order.uuid)?.customerName, "Ada", "the first order is untouched")

        sameKey.uuid = "00000000-0000-4000-8000-000000000000"
        let missing = assertStoreError(.notFound) { try db.updateOrder(sameKey) }
        XCTAssertNil(missing?.code)
        XCTAssertTrue(missing?.message.contains(sameKey.uuid) ?? false)
        assertStoreError(.notFound) { try db.deleteOrder(uuid: sameKey.uuid) }
        XCTAssertEqual(try db.orderCount(), 1)
    }

    func testUUIDsAreComparedCaseInsensitivelyAndKeptAsWritten() throws {
        let db = try openDatabase()
        let written = "6F9619FF-8b86-D011-b42d-00C04FC964FF"
        try db.insertOrder(makeOrder(written))
        XCTAssertEqual(try db.order(uuid: written.lowercased())?.uuid, written)
        XCTAssertEqual(try db.order(uuid: written.uppercased())?.uuid, written)

        var update = makeOrder(written.lowercased(), customer: "Lin")
        update.version = 3
        try db.updateOrder(update)
        XCTAssertEqual(try db.order(uuid: written)?.customerName, "Lin")
        try db.deleteOrder(uuid: written.uppercased())
        XCTAssertEqual(try db.orderCount(), 0)
    }

    func testUpsertInsertsThenReplaces() throws {
        let db = try openDatabase()
        var order = makeOrder()
        try db.upsertOrder(order)
        XCTAssertEqual(try db.order(uuid: order.uuid), order)
        order.customerName = "Replaced"
        order.version = 5
        order.uuid = order.uuid.uppercased()
        try db.upsertOrder(order)
        XCTAssertEqual(try db.order(uuid: order.uuid), order)
        XCTAssertEqual(try db.orderCount(), 1)
    }

    func testTimestampsRoundTripExactly() throws {
        let db = try openDatabase()
        let cases: [(Int64, Int)] = [
            (1_452_605_716_000, 480), // 2016-01-12T21:35:16+0800, StorePOS's example
            (1_452_605_716_250, -330), // milliseconds and a negative half-hour offset
            (-86_400_123, 0), // before 1970
            (253_402_300_799_999, 840), // 9999-12-31T23:59:59.999Z at +14:00
        ]
        for (index, (millis, offset)) in cases.enumerated() {
            let order = makeOrder(
                "00000000-0000-4000-8000-00000000000\(index)", createdMillis: millis,
                offset: offset)
            try db.insertOrder(order)
            let stored = try XCTUnwrap(db.order(uuid: order.uuid))
            XCTAssertEqual(stored.created, order.created)
            let text = try db.connection.scalarText(
                "SELECT created_text FROM orders WHERE uuid_key = ?",
                [.text(order.key)])
            XCTAssertEqual(text, order.created.storePOSText)
        }
        let first = try db.connection.scalarText(
            "SELECT created_text FROM orders WHERE uuid_key = ?",
            [.text("00000000-0000-4000-8000-000000000000")])
        XCTAssertEqual(first, "2016-01-12T21:35:16+0800")
    }

    func testExtraFieldsAndEmptyStringsRoundTrip() throws {
        let db = try openDatabase()
        var order = makeOrder(customer: "")
        order.tableName = ""
        order.shippingMethod = nil
        order.extra = JSONObject([
            ("status", .string("open")),
            (
                "items",
                .array([
                    .object(
                        JSONObject([
                            ("sku", .string("A-1")), ("quantity", .int(2)),
                            ("unitPrice", .int(1250)),
                        ]))
                ])
            ),
            ("note", .string("no onions \u{1F9C5}, \"quoted\"\nsecond line")),
            ("ratio", .double(1.5)),
            ("flag", .bool(true)),
            ("nothing", .null),
        ])
        try db.insertOrder(order)
        let stored = try XCTUnwrap(db.order(uuid: order.uuid))
        XCTAssertEqual(stored, order)
        XCTAssertEqual(stored.customerName, "")
        XCTAssertEqual(stored.tableName, "", "an empty string is not stored as NULL")
        XCTAssertNil(stored.shippingMethod)
        XCTAssertEqual(stored.extra.keys, ["status", "items", "note", "ratio", "flag", "nothing"])
    }

    func testTextThatLooksLikeSQLIsStoredVerbatim() throws {
        let db = try openDatabase()
        let hostile = "'); DROP TABLE orders;--"
        var order = makeOrder(customer: hostile)
        order.shippingMethod = "\" OR 1=1 --"
        order.tableName = "Robert'); DELETE FROM orders WHERE ('1'='1"
        order.extra = JSONObject([("note", .string(hostile))])
        try db.insertOrder(order)
        try db.insertOrder(makeOrder(customer: "second"))
        try db.setMetadata(hostile, hostile)

        let stored = try XCTUnwrap(db.order(uuid: order.uuid))
        XCTAssertEqual(stored.customerName, hostile)
        XCTAssertEqual(stored.shippingMethod, "\" OR 1=1 --")
        XCTAssertEqual(stored.tableName, "Robert'); DELETE FROM orders WHERE ('1'='1")
        XCTAssertEqual(stored.extra["note"], .string(hostile))
        XCTAssertEqual(try db.metadata(hostile), hostile)
        XCTAssertEqual(try db.orderCount(), 2, "both orders and the table are still there")
        XCTAssertNil(try db.order(uuid: hostile))
        assertStoreError(.notFound) { try db.deleteOrder(uuid: "' OR '1'='1") }
        XCTAssertEqual(try db.orderCount(), 2)
    }

    func testTextWithNULBytesIsKeptWhole() throws {
        let db = try openDatabase()
        let order = makeOrder(customer: "before\u{0}after")
        try db.insertOrder(order)
        XCTAssertEqual(try db.order(uuid: order.uuid)?.customerName, "before\u{0}after")
    }

    func testPaginationOrdersByCreatedThenUUID() throws {
        let db = try openDatabase()
        // Inserted out of order; three share one created time, so uuid decides among them.
        let specs: [(String, Int64)] = [
            ("cccccccc-0000-4000-8000-000000000000", 3_000),
            ("AAAAAAAA-0000-4000-8000-000000000000", 2_000),
            ("bbbbbbbb-0000-4000-8000-000000000000", 2_000),
            ("00000000-0000-4000-8000-000000000000", 5_000),
            ("dddddddd-0000-4000-8000-000000000000", 1_000),
            ("Abababab-0000-4000-8000-000000000000", 2_000),
            ("eeeeeeee-0000-4000-8000-000000000000", -1_000),
        ]
        for (uuid, millis) in specs {
            // Different offsets must not matter: ordering is by the instant.
            try db.insertOrder(makeOrder(uuid, createdMillis: millis, offset: Int(millis % 7) * 60))
        }
        let expected = [
            "eeeeeeee-0000-4000-8000-000000000000",
            "dddddddd-0000-4000-8000-000000000000",
            "AAAAAAAA-0000-4000-8000-000000000000",
            "Abababab-0000-4000-8000-000000000000",
            "bbbbbbbb-0000-4000-8000-000000000000",
            "cccccccc-0000-4000-8000-000000000000",
            "00000000-0000-4000-8000-000000000000",
        ]
        XCTAssertEqual(try db.allOrders().map(\.uuid), expected)

        var paged: [String] = []
        for page in 1...3 {
            let result = try db.orders(page: page, per: 3)
            XCTAssertEqual(result.total, 7)
            XCTAssertEqual(result.orders.count, page < 3 ? 3 : 1)
            paged += result.orders.map(\.uuid)
        }
        XCTAssertEqual(paged, expected)

        let exact = try db.orders(page: 1, per: 7)
        XCTAssertEqual(exact.orders.map(\.uuid), expected)
        let beyond = try db.orders(page: 2, per: 7)
        XCTAssertEqual(beyond.total, 7)
        XCTAssertEqual(beyond.orders, [])
        let huge = try db.orders(page: Int.max, per: Int.max)
        XCTAssertEqual(huge.total, 7)
        XCTAssertEqual(huge.orders, [])
        XCTAssertEqual(try db.orders(page: 1, per: Int.max).orders.count, 7)

        assertStoreError(.invalidArgument) { try db.orders(page: 0, per: 10) }
        assertStoreError(.invalidArgument) { try db.orders(page: 1, per: 0) }
    }

    func testPaginationOfAnEmptyStore() throws {
        let db = try openDatabase()
        let result = try db.orders(page: 1, per: 50)
        XCTAssertEqual(result.total, 0)
        XCTAssertEqual(result.orders, [])
        XCTAssertEqual(try db.allOrders(), [])
    }

    func testReplaceAllOrdersIsAtomic() throws {
        let db = try openDatabase()
        let old = [makeOrder(customer: "old 1"), makeOrder(customer: "old 2")]
        for order in old { try db.insertOrder(order) }

        let snapshot = (0..<5).map { makeOrder(customer: "new \($0)", createdMillis: Int64($0) * 1000) }
        try db.transaction {
            try db.replaceAllOrders(with: snapshot)
            try db.setMetadata("slave.lastSeq", "42")
        }
        XCTAssertEqual(try db.allOrders(), snapshot)
        XCTAssertEqual(try db.metadata("slave.lastSeq"), "42")

        // Two orders with one key: nothing changes, not even inside the caller's transaction.
        let clash = [
            makeOrder("11111111-0000-4000-8000-000000000000"),
            makeOrder("11111111-0000-4000-8000-000000000000".uppercased()),
        ]
        try db.transaction {
            assertStoreError(.duplicate) { try db.replaceAllOrders(with: clash) }
            XCTAssertEqual(try db.allOrders(), snapshot, "the savepoint was rolled back")
        }
        assertStoreError(.duplicate) { try db.replaceAllOrders(with: clash) }
        XCTAssertEqual(try db.allOrders(), snapshot)

        try db.replaceAllOrders(with: [])
        XCTAssertEqual(try db.orderCount(), 0)
    }
}
