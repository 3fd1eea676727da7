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

    /// The StorePOS form written digit by digit (years 0 to 9999, offsets under 100 hours) is
    /// what padding each field does, and the same bytes `appendStorePOSText` gives.
    func testStorePOSTextIsEachFieldPadded() {
        func padded(_ t: OrderTimestamp) -> String {
            let local = t.epochMillis + Int64(t.offsetMinutes) * 60_000
            let secs = Int64((Double(local) / 1000).rounded(.down))
            let days = Int64((Double(secs) / 86_400).rounded(.down))
            let rem = secs - days * 86_400
            let (y, m, d) = OrderTimestamp.civil(fromDays: days)
            func p(_ v: Int64, _ width: Int) -> String { String(repeating: "0", count: max(0, width - String(v).count)) + String(v) }
            let off = Int64(abs(t.offsetMinutes))
            return "\(p(y, 4))-\(p(m, 2))-\(p(d, 2))T\(p(rem / 3600, 2)):\(p(rem / 60 % 60, 2)):\(p(rem % 60, 2))"
                + "\(t.offsetMinutes < 0 ? "-" : "+")\(p(off / 60, 2))\(p(off % 60, 2))"
        }
        let instants: [Int64] = [
            0, -1, 999, 1_452_605_716_250, -62_167_219_200_000, 253_402_300_799_999, 951_782_400_000, -2_208_988_800_001,
        ]
        for millis in instants {
            for offset in [0, 480, -330, 59, -1, 1439, -1439, 5999, -5999] {
                let t = OrderTimestamp(epochMillis: millis, offsetMinutes: offset)
                var bytes: [UInt8] = Array("x".utf8)
                t.appendStorePOSText(to: &bytes)
                XCTAssertEqual(t.storePOSText, padded(t), "\(millis) \(offset)")
                XCTAssertEqual(String(decoding: bytes, as: UTF8.self), "x" + padded(t), "\(millis) \(offset)")
            }
        }
        // Outside four-digit years and two-digit offset hours the fields keep their own width.
        XCTAssertEqual(OrderTimestamp(epochMillis: 253_402_300_800_000).storePOSText, "10000-01-01T00:00:00+0000")
        XCTAssertEqual(OrderTimestamp(epochMillis: -62_167_219_200_001).storePOSText, "00-1-12-31T23:59:59+0000")
        XCTAssertEqual(OrderTimestamp(epochMillis: 0, offsetMinutes: 6000).storePOSText, "1970-01-05T04:00:00+10000")
    }
}
