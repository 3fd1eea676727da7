import SyncCore
import XCTest

@testable import NodePolicy

final class LocalAPIRouteTests: XCTestCase {
    let u = "9437C8F5-D742-46CB-9847-737C5809392C"

    func decode(_ method: String, _ path: String, query: [(String, String)] = [], body: String = "") -> Result<
        LocalAPIRoute, LocalAPIRoute.Failure
    > {
        LocalAPIRoute.decode(method: method, path: path, query: query, body: Array(body.utf8))
    }

    func testRoutes() throws {
        XCTAssertEqual(try decode("GET", "/v1/status").get(), .status)
        XCTAssertEqual(try decode("GET", "/v1/orders").get(), .list(page: 1, per: 50, status: nil))
        XCTAssertEqual(try decode("GET", "/v1/orders", query: [("page", "3"), ("per", "2")]).get(), .list(page: 3, per: 2, status: nil))
        XCTAssertEqual(
            try decode("GET", "/v1/orders", query: [("status", "in_progress")]).get(), .list(page: 1, per: 50, status: .inProgress))
        XCTAssertEqual(try decode("GET", "/v1/orders/\(u)").get(), .show(uuid: u))
        XCTAssertEqual(try decode("GET", "/v1/journal").get(), .journal(since: 0, order: nil, limit: 100))
        XCTAssertEqual(
            try decode("GET", "/v1/journal", query: [("since", "7"), ("order", u), ("limit", "5")]).get(),
            .journal(since: 7, order: u, limit: 5))
        guard case .write(let m, let single) = try decode("PATCH", "/v1/orders/\(u)", body: #"{"tableSize":6}"#).get() else {
            return XCTFail("not a write")
        }
        XCTAssertEqual(m.operation, .update)
        XCTAssertEqual(single, u)
        XCTAssertEqual(m.orders.first?.objectValue?["uuid"], .string(u))
        XCTAssertEqual(m.orders.first?.objectValue?["tableSize"], .int(6))
        guard case .write(let r, _) = try decode("DELETE", "/v1/orders/\(u)").get() else { return XCTFail() }
        XCTAssertEqual(r.operation, .remove)
        guard case .write(let ops, nil) = try decode("POST", "/v1/operations", body: #"{"operation":2,"orders":[{"uuid":"\#(u)"}]}"#).get()
        else {
            return XCTFail()
        }
        XCTAssertEqual(ops.operation, .remove)
    }

    func testErrors() {
        func failure(_ r: Result<LocalAPIRoute, LocalAPIRoute.Failure>) -> (Int, String)? {
            if case .failure(let f) = r { return (f.status, f.code) }
            return nil
        }
        XCTAssertEqual(failure(decode("GET", "/orders"))?.0, 404)
        XCTAssertEqual(failure(decode("GET", "/v1/nope"))?.1, "no_route")
        XCTAssertEqual(failure(decode("PUT", "/v1/orders"))?.0, 405)
        XCTAssertEqual(failure(decode("GET", "/v1/orders", query: [("per", "0")]))?.1, "invalid_query")
        XCTAssertEqual(failure(decode("GET", "/v1/orders", query: [("page", "x")]))?.0, 400)
        XCTAssertEqual(failure(decode("GET", "/v1/orders", query: [("status", "done")]))?.1, "invalid_query")
        XCTAssertEqual(failure(decode("GET", "/v1/orders/not-a-uuid"))?.1, "invalid_uuid")
        XCTAssertEqual(failure(decode("GET", "/v1/journal", query: [("order", "x")]))?.1, "invalid_uuid")
        XCTAssertEqual(failure(decode("GET", "/v1/journal", query: [("limit", "0")]))?.1, "invalid_query")
        XCTAssertEqual(failure(decode("POST", "/v1/journal"))?.0, 405)
        XCTAssertEqual(failure(decode("POST", "/v1/orders", body: "{nope"))?.1, "malformed_json")
        XCTAssertEqual(failure(decode("POST", "/v1/orders", body: "[1]"))?.1, "invalid_message")
        XCTAssertEqual(failure(decode("POST", "/v1/orders", body: #"{"customerName":"x"}"#))?.1, "invalid_uuid")
        XCTAssertEqual(failure(decode("POST", "/v1/operations", body: #"{"operation":9,"orders":[]}"#))?.1, "unknown_operation")
    }

    func testWriteAnswers() {
        let o = Order(uuid: u, customerName: "K", created: OrderTimestamp(epochMillis: 0))
        XCTAssertEqual(
            LocalAPIRoute.writeAnswer(single: u, operation: .create, applied: [o], unchanged: [], errors: [], seq: 1).status, 201)
        XCTAssertEqual(
            LocalAPIRoute.writeAnswer(single: u, operation: .create, applied: [], unchanged: [o], errors: [], seq: nil).status, 200)
        let nf = LocalAPIRoute.writeAnswer(
            single: u, operation: .update, applied: [], unchanged: [],
            errors: [WireError(.notFound, "no", uuid: u)], seq: nil)
        XCTAssertEqual(nf.status, 404)
        XCTAssertEqual(nf.body.objectValue?["error"]?.objectValue?["code"], .string("not_found"))
        let batch = LocalAPIRoute.writeAnswer(
            single: nil, operation: .create, applied: [o], unchanged: [],
            errors: [WireError(.invalidUUID, "bad", index: 1)], seq: 4)
        XCTAssertEqual(batch.status, 200)
        XCTAssertEqual(batch.body.objectValue?["seq"], .int(4))
        XCTAssertEqual(batch.body.objectValue?["errors"]?.arrayValue?.count, 1)
    }
}
