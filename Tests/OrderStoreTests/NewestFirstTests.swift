import XCTest

@testable import OrderStore

/// `GET /v1/orders?sort=-created` (the dashboard's newest-first list): the exact reverse of
/// the oldest-first order, page by page, with the same total.
extension OrderTests {
    func testNewestFirstPagesAreTheOldestFirstOrderReversed() throws {
        let db = try openDatabase()
        let specs: [(String, Int64)] = [
            ("cccccccc-0000-4000-8000-000000000000", 3_000), ("AAAAAAAA-0000-4000-8000-000000000000", 2_000),
            ("bbbbbbbb-0000-4000-8000-000000000000", 2_000), ("00000000-0000-4000-8000-000000000000", 5_000),
            ("dddddddd-0000-4000-8000-000000000000", 1_000),
        ]
        for (uuid, millis) in specs { try db.insertOrder(makeOrder(uuid, createdMillis: millis)) }
        let oldest = try db.orders(page: 1, per: 10).orders.map(\.uuid)
        var newest: [String] = []
        for page in 1...3 {
            let r = try db.orders(page: page, per: 2, status: nil, newestFirst: true)
            XCTAssertEqual(r.total, 5)
            newest += r.orders.map(\.uuid)
        }
        XCTAssertEqual(newest, Array(oldest.reversed()))
        XCTAssertEqual(newest.first, "00000000-0000-4000-8000-000000000000")
    }
}
