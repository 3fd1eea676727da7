import JSON
import SyncCore
import XCTest

@testable import OrderStore

final class FeedTableTests: StoreTestCase {
    func testFeedRowsAreNumberedOnceAndPrunedToTheBound() throws {
        let db = try openDatabase()
        defer { db.close() }
        XCTAssertEqual(try db.feedBounds().oldest, 0)
        XCTAssertEqual(try db.feedBounds().last, 0)
        let snap = SlaveFeedEvent.snapshot(masterSeq: 1, epoch: "e", orders: 0)
        try db.appendFeed([snap, snap, snap], atMillis: 1000)
        XCTAssertEqual(try db.feedBounds().oldest, 0)
        XCTAssertEqual(try db.feedBounds().last, 3)
        let rows = try db.feed(after: 1, limit: 10)
        XCTAssertEqual(rows.map(\.seq), [2, 3])
        XCTAssertTrue(rows[0].text.hasPrefix("{\"seq\":2,\"operation\":\"snapshot\""), rows[0].text)
        XCTAssertEqual(try db.feed(after: 0, limit: 1).map(\.seq), [1])
        // Pruned rows leave a gap at the start; numbers are never given out twice.
        try db.connection.executeOnce("DELETE FROM feed")
        XCTAssertEqual(try db.feedBounds().oldest, 3)
        try db.appendFeed([snap], atMillis: 2000)
        XCTAssertEqual(try db.feed(after: 0, limit: 10).map(\.seq), [4])
        XCTAssertEqual(try db.feedBounds().oldest, 3)
    }
}
