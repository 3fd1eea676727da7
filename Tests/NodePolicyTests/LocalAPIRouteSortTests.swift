import XCTest

@testable import NodePolicy

/// `sort` on `GET /v1/orders`: `created` (the default) or `-created`; anything else is a 400
/// naming both.
extension LocalAPIRouteTests {
    func testOrdersSortOldestOrNewestFirst() throws {
        XCTAssertEqual(try decode("GET", "/v1/orders").get(), .list(page: 1, per: 50, status: nil, newestFirst: false))
        XCTAssertEqual(
            try decode("GET", "/v1/orders", query: [("sort", "created")]).get(), .list(page: 1, per: 50, status: nil, newestFirst: false))
        XCTAssertEqual(
            try decode("GET", "/v1/orders", query: [("sort", "-created"), ("page", "2")]).get(),
            .list(page: 2, per: 50, status: nil, newestFirst: true))
        for bad in ["newest", "-uuid", ""] {
            guard case .failure(let f) = decode("GET", "/v1/orders", query: [("sort", bad)]) else { return XCTFail("accepted \(bad)") }
            XCTAssertEqual(f.status, 400)
            XCTAssertEqual(f.code, "invalid_query")
            XCTAssertTrue(f.message.contains("-created"), f.message)
        }
    }
}
