import XCTest

@testable import SyncCore

final class OrderTimestampTests: XCTestCase {
    func testStorePOSFormRoundTrips() throws {
        let t = try XCTUnwrap(OrderTimestamp(parsing: "2016-01-12T21:35:16+0800"))
        XCTAssertEqual(t.epochMillis, 1_452_605_716_000)
        XCTAssertEqual(t.offsetMinutes, 480)
        XCTAssertEqual(t.storePOSText, "2016-01-12T21:35:16+0800")
    }

    func testRFC3339Forms() throws {
        let z = try XCTUnwrap(OrderTimestamp(parsing: "2016-01-12T13:35:16Z"))
        XCTAssertEqual(z.epochMillis, 1_452_605_716_000)
        XCTAssertEqual(z.storePOSText, "2016-01-12T13:35:16+0000")
        let f = try XCTUnwrap(OrderTimestamp(parsing: "2016-01-12T21:35:16.25+08:00"))
        XCTAssertEqual(f.epochMillis, 1_452_605_716_250)
        let neg = try XCTUnwrap(OrderTimestamp(parsing: "1969-12-31 23:59:59-05:30"))
        XCTAssertEqual(neg.storePOSText, "1969-12-31T23:59:59-0530")
        XCTAssertEqual(neg.epochMillis, (-1 + 330 * 60) * 1000)
    }

    func testRejectsNonsense() {
        for s in [
            "", "2016-01-12", "2016-13-01T00:00:00Z", "2016-02-30T00:00:00Z", "2016-01-12T25:00:00Z",
            "2016-01-12T21:35:16", "2016-01-12T21:35:16+08", "yesterday", "2016-01-12T21:35:16+0800x",
        ] {
            XCTAssertNil(OrderTimestamp(parsing: s), s)
        }
        XCTAssertNotNil(OrderTimestamp(parsing: "2016-02-29T00:00:00Z"))
    }
}
