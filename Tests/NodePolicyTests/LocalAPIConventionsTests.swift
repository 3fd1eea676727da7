import HTTP1
import JSON
import SyncCore
import XCTest

@testable import NodePolicy

/// The HTTP conventions of the local API (Docs/API.md, "HTTP conventions"), at the route level.
final class LocalAPIConventionsTests: XCTestCase {
    let u = "9437C8F5-D742-46CB-9847-737C5809392C"

    private func request(_ method: String, _ target: String, _ headers: [(String, String)] = [], body: String = "") throws -> HTTPRequest {
        try HTTPRequest(method: method, target: target, headers: HTTPHeaders(headers), body: Array(body.utf8))
    }

    /// The exchange after its checks, or the refusal.
    private func exchange(_ r: HTTPRequest) -> (LocalAPIExchange, LocalAPIRoute.Failure?) {
        var e = LocalAPIExchange(r)
        let refusal = e.check(r)
        return (e, refusal)
    }

    private func header(_ headers: [(String, String)], _ name: String) -> String? {
        headers.first { $0.0 == name }?.1
    }

    func testReasonPhrasesForEveryStatusTheAPISends() {
        for (status, phrase) in [
            (200, "OK"), (201, "Created"), (202, "Accepted"), (400, "Bad Request"), (404, "Not Found"), (405, "Method Not Allowed"),
            (408, "Request Timeout"), (409, "Conflict"), (410, "Gone"), (412, "Precondition Failed"), (413, "Content Too Large"),
            (415, "Unsupported Media Type"), (429, "Too Many Requests"), (431, "Request Header Fields Too Large"),
            (500, "Internal Server Error"), (501, "Not Implemented"), (503, "Service Unavailable"), (505, "HTTP Version Not Supported"),
        ] {
            XCTAssertEqual(HTTPResponse(status: status).reason, phrase)
        }
        XCTAssertEqual(HTTPResponse(status: 299).reason, "Success")
        XCTAssertEqual(HTTPResponse(status: 599).reason, "Server Error")
        XCTAssertFalse(HTTPResponse(status: 410).serialize().isEmpty)
        XCTAssertTrue(String(decoding: HTTPResponse(status: 410).serialize(), as: UTF8.self).hasPrefix("HTTP/1.1 410 Gone\r\n"))
    }

    func testHeadKeepsTheHeadersAndDropsTheBody() throws {
        let response = HTTPResponse(status: 200, headers: ["Content-Type": "application/json"], body: Array("{\"a\":1}\n".utf8))
        let head = String(decoding: response.serialize(omittingBody: true), as: UTF8.self)
        XCTAssertTrue(head.contains("Content-Length: 8\r\n"), head)
        XCTAssertTrue(head.hasSuffix("\r\n\r\n"), head)
        XCTAssertEqual(Array(response.serialize(omittingBody: true)), Array(response.serialize().dropLast(8)))
        let (e, refusal) = exchange(try request("HEAD", "/v1/orders/\(u)"))
        XCTAssertNil(refusal)
        XCTAssertTrue(e.isHead)
        XCTAssertEqual(e.method, "GET")
    }

    func testAllowOn405ForEveryPath() {
        let cases: [(String, String, String)] = [
            ("PUT", "/v1/orders", "GET, HEAD, POST"), ("POST", "/v1/orders/\(u)", "GET, HEAD, PATCH, DELETE"),
            ("GET", "/v1/operations", "POST"), ("DELETE", "/v1/status", "GET, HEAD"), ("POST", "/v1/journal", "GET, HEAD"),
            ("PATCH", "/v1/rejections", "GET, HEAD"), ("PATCH", "/v1/pairing", "GET, HEAD, POST, DELETE"),
            ("POST", "/v1/pairing/till-3", "DELETE"), ("POST", "/v1/terminals", "GET, HEAD"),
            ("GET", "/v1/terminals/till-3/revoke", "POST"), ("GET", "/v1/key/rotate", "POST"),
        ]
        for (method, path, allow) in cases {
            let req = try? HTTPRequest(method: method, target: path)
            let answer = LocalAPIExchange(req!).answer(status: 405, body: Array("{}".utf8))
            XCTAssertEqual(header(answer.headers, "Allow"), allow, "\(method) \(path)")
            if let master = MasterAPIRoute.decode(method: method, path: path, body: []) {
                guard case .failure(let f) = master else { return XCTFail("\(method) \(path) is routed") }
                XCTAssertEqual(f.status, 405, "\(method) \(path)")
            } else {
                guard case .failure(let f) = LocalAPIRoute.decode(method: method, path: path, query: [], body: []) else {
                    return XCTFail("\(method) \(path) is routed")
                }
                XCTAssertEqual(f.status, 405, "\(method) \(path)")
            }
        }
        XCTAssertNil(LocalAPIExchange.allowedMethods(path: "/v1/nope"))
        XCTAssertNil(LocalAPIExchange.allowedMethods(path: "/v1/orders/\(u)/items"))
        guard case .failure(let f) = LocalAPIRoute.decode(method: "GET", path: "/v1/orders/\(u)/items", query: [], body: []) else {
            return XCTFail()
        }
        XCTAssertEqual(f.code, "no_route")
    }

    func testLocationAndETagOnAnOrder() throws {
        let order = #"{"uuid":"\#(u)","customerName":"Kevin","created":"2016-01-12T21:35:16+0800","version":3,"status":"open"}"#
        let created = LocalAPIExchange(try request("POST", "/v1/orders")).answer(status: 201, body: Array(order.utf8))
        XCTAssertEqual(header(created.headers, "Location"), "/v1/orders/\(u)")
        XCTAssertEqual(header(created.headers, "ETag"), "\"v3\"")
        let shown = LocalAPIExchange(try request("GET", "/v1/orders/\(u)")).answer(status: 200, body: Array(order.utf8))
        XCTAssertEqual(header(shown.headers, "ETag"), "\"v3\"")
        XCTAssertNil(header(shown.headers, "Location"))
        let pending = LocalAPIExchange(try request("PATCH", "/v1/orders/\(u)")).answer(status: 202, body: Array(order.utf8))
        XCTAssertEqual(header(pending.headers, "ETag"), "\"v3\"")
        let removed = LocalAPIExchange(try request("DELETE", "/v1/orders/\(u)")).answer(status: 200, body: Array(order.utf8))
        XCTAssertNil(header(removed.headers, "ETag"), "a removed order has no current representation")
        let list = LocalAPIExchange(try request("GET", "/v1/orders")).answer(status: 200, body: Array(#"{"orders":[]}"#.utf8))
        XCTAssertTrue(list.headers.isEmpty)
        let pairing = LocalAPIExchange(try request("POST", "/v1/pairing")).answer(status: 201, body: Array("{}".utf8))
        XCTAssertEqual(header(pairing.headers, "Location"), "/v1/pairing")
    }

    func testIfMatchParsing() {
        XCTAssertEqual(try LocalAPIExchange.parseIfMatch("*").get(), .any)
        XCTAssertEqual(try LocalAPIExchange.parseIfMatch("\"v7\"").get(), .version(7))
        XCTAssertEqual(try LocalAPIExchange.parseIfMatch(" \"x\" , \"v7\" ").get(), .version(7))
        XCTAssertEqual(try LocalAPIExchange.parseIfMatch("W/\"v7\"").get(), .version(Int64.max), "weak tags never match")
        XCTAssertEqual(try LocalAPIExchange.parseIfMatch("\"v0\"").get(), .version(Int64.max))
        // An opaque tag may hold commas (RFC 9110 8.8.3): the list splits outside quotes only.
        XCTAssertEqual(try LocalAPIExchange.parseIfMatch(",W/\"a,b\" , \"v7\",,").get(), .version(7))
        XCTAssertEqual(try LocalAPIExchange.parseIfMatch("\",\"").get(), .version(Int64.max))
        for bad in ["v7", "\"v1\", \"v2\"", "", "\"v1", "\"a b\"", "\"a\"b\"", "\"\u{7F}\""] {
            guard case .failure(let f) = LocalAPIExchange.parseIfMatch(bad) else { return XCTFail(bad) }
            XCTAssertEqual(f.code, "invalid_header", bad)
            XCTAssertEqual(f.status, 400, bad)
        }
    }

    func testIfMatchNarrowsAnUpdateOrRemoveToThatVersion() throws {
        let (e, refusal) = exchange(
            try request("PATCH", "/v1/orders/\(u)", [("If-Match", "\"v4\""), ("Content-Type", "application/json")], body: #"{"note":"x"}"#))
        XCTAssertNil(refusal)
        let route = try LocalAPIRoute.decode(method: "PATCH", path: "/v1/orders/\(u)", query: [], body: Array(#"{"note":"x"}"#.utf8)).get()
        guard case .write(let m, _) = try e.narrowing(route).get() else { return XCTFail() }
        XCTAssertEqual(m.orders.first?.objectValue?["version"], .int(4))
        XCTAssertEqual(m.orders.first?.objectValue?["note"], .string("x"))

        let (d, _) = exchange(try request("DELETE", "/v1/orders/\(u)", [("If-Match", "\"v2\"")]))
        let remove = try LocalAPIRoute.decode(method: "DELETE", path: "/v1/orders/\(u)", query: [], body: []).get()
        guard case .write(let r, _) = try d.narrowing(remove).get() else { return XCTFail() }
        XCTAssertEqual(r.orders.first?.objectValue?["version"], .int(2))

        let (any, _) = exchange(try request("DELETE", "/v1/orders/\(u)", [("If-Match", "*")]))
        XCTAssertEqual(try any.narrowing(remove).get(), remove)

        let clash = try LocalAPIRoute.decode(method: "PATCH", path: "/v1/orders/\(u)", query: [], body: Array(#"{"version":3}"#.utf8)).get()
        // Two versions that cannot both be current: a precondition that fails (412), not a
        // malformed request (the document allows both).
        guard case .write(let clashed, _) = try e.narrowing(clash).get() else { return XCTFail() }
        XCTAssertEqual(clashed.orders.first?.objectValue?["version"], .int(Int64.max))

        let (onList, _) = exchange(try request("GET", "/v1/orders", [("If-Match", "*")]))
        guard case .failure(let g) = onList.narrowing(.list(page: 1, per: 50, status: nil)) else { return XCTFail() }
        XCTAssertEqual(g.code, "invalid_header")
    }

    func testAConflictUnderIfMatchIs412WithTheCurrentOrder() throws {
        let current = Order(uuid: u, customerName: "Kevin", created: OrderTimestamp(epochMillis: 0), version: 5)
        let body = LocalAPIRoute.errorBody(code: "conflict", message: "the order changed since version 4", uuid: u, current: current)
        let (e, _) = exchange(try request("DELETE", "/v1/orders/\(u)", [("If-Match", "\"v4\"")]))
        let answer = e.answer(status: 409, body: body.serializedBytes())
        XCTAssertEqual(answer.status, 412)
        XCTAssertEqual(header(answer.headers, "ETag"), "\"v5\"")
        let error = try JSONParser.parse(answer.body).objectValue?["error"]?.objectValue
        XCTAssertEqual(error?["code"], .string("precondition_failed"))
        XCTAssertEqual(error?["current"]?.objectValue?["version"], .int(5))
        XCTAssertEqual(error?["uuid"], .string(u))
        // Without If-Match the same answer stays a 409 conflict.
        let plain = LocalAPIExchange(try request("DELETE", "/v1/orders/\(u)")).answer(status: 409, body: body.serializedBytes())
        XCTAssertEqual(plain.status, 409)
        XCTAssertEqual(plain.body, body.serializedBytes())
        // Other refusals under If-Match keep their status.
        let transition = LocalAPIRoute.errorBody(code: "invalid_transition", message: "completed", uuid: u)
        XCTAssertEqual(e.answer(status: 409, body: transition.serializedBytes()).status, 409)
    }

    func testContentTypeIsChecked() throws {
        for ok in ["application/json", "application/json; charset=utf-8", "Application/JSON;charset=\"UTF-8\""] {
            XCTAssertNil(LocalAPIExchange.checkContentType(ok), ok)
            XCTAssertNil(exchange(try request("POST", "/v1/orders", [("Content-Type", ok)], body: "{}")).1, ok)
        }
        for bad in [nil, "text/plain", "application/x-www-form-urlencoded", "application/json; charset=latin1", "application/jsonx"] {
            let refusal = LocalAPIExchange.checkContentType(bad)
            XCTAssertEqual(refusal?.status, 415, bad ?? "none")
            XCTAssertEqual(refusal?.code, "unsupported_media_type")
        }
        XCTAssertEqual(exchange(try request("POST", "/v1/orders", [("Content-Type", "text/plain")], body: "{}")).1?.status, 415)
        // Without a body there is nothing to check.
        XCTAssertNil(exchange(try request("POST", "/v1/pairing", [("Content-Type", "text/plain")])).1)
    }

    func testAnEmptyBodyIsSaidSo() {
        for (method, path) in [("POST", "/v1/orders"), ("PATCH", "/v1/orders/\(u)"), ("POST", "/v1/operations")] {
            guard case .failure(let f) = LocalAPIRoute.decode(method: method, path: path, query: [], body: []) else {
                return XCTFail("\(method) \(path) accepted no body")
            }
            XCTAssertEqual(f.status, 400)
            XCTAssertEqual(f.code, "empty_body", "\(method) \(path)")
        }
        guard case .success(.openPairing) = MasterAPIRoute.decode(method: "POST", path: "/v1/pairing", body: []) else {
            return XCTFail("the pairing body is optional")
        }
    }
}
