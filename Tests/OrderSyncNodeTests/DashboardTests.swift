import EventLoopIO
import Foundation
import JSON
import SecureLink
import XCTest

@testable import NodePolicy
@testable import OrderSyncNode

/// The store dashboard: its tokens, routes and query parsing (pure), and a master serving it
/// over TCP (`--http-listen`): 401 without a token, reads with one, a session cookie, the
/// journal search, a revocation that closes the event stream; a slave serving the page and
/// saying it is a standby (it serves the dashboard once promoted).
final class DashboardTests: XCTestCase {
    private var dataDirectory = ""

    override func setUp() {
        dataDirectory = NSTemporaryDirectory() + "ordersync-dashboard-" + UUID().uuidString
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: dataDirectory)
    }

    func testTokensKeepOnlyTheDigest() throws {
        var tokens = DashboardTokens()
        let made = try tokens.make(name: "office", nowMillis: 1_000).get()
        XCTAssertEqual(made.secret.count, 64)
        XCTAssertTrue(made.secret.allSatisfy { $0.isHexDigit && !$0.isUppercase })
        XCTAssertEqual(made.token.name, "office")
        XCTAssertEqual(made.token.createdAtMillis, 1_000)
        XCTAssertFalse(tokens.stored.contains(made.secret), "the secret is never stored")
        XCTAssertTrue(tokens.stored.contains(DashboardTokens.digest(made.secret)))
        XCTAssertEqual(tokens.token(matching: made.secret)?.id, made.token.id)
        XCTAssertNil(tokens.token(matching: String(repeating: "0", count: 64)))
        XCTAssertNil(tokens.token(matching: made.secret.uppercased()))
        XCTAssertNil(tokens.token(matching: String(made.secret.dropLast())))
        XCTAssertEqual(tokens.make(name: "office", nowMillis: 2_000).map(\.token.id), .failure(.nameTaken))
        let other = try tokens.make(name: nil, nowMillis: 3_000).get()
        XCTAssertEqual(other.token.name, "dashboard-\(other.token.id)")
        XCTAssertNotEqual(other.secret, made.secret)

        let reloaded = try DashboardTokens(stored: tokens.stored)
        XCTAssertEqual(reloaded, tokens)
        XCTAssertEqual(try DashboardTokens(stored: nil).tokens, [])
        XCTAssertThrowsError(try DashboardTokens(stored: "{not json"))

        XCTAssertEqual(tokens.revoke("office")?.id, made.token.id)
        XCTAssertNil(tokens.token(matching: made.secret), "revoked: refused")
        XCTAssertEqual(tokens.revoke(other.token.id)?.name, other.token.name)
        XCTAssertNil(tokens.revoke("office"))
        XCTAssertEqual(tokens.tokens, [])
    }

    func testTokenRoutes() throws {
        func route(_ method: String, _ path: String, _ body: String = "") -> Result<MasterAPIRoute, LocalAPIRoute.Failure>? {
            MasterAPIRoute.decode(method: method, path: path, body: Array(body.utf8))
        }
        XCTAssertEqual(try route("POST", "/v1/dashboard/tokens")?.get(), .makeDashboardToken(name: nil))
        XCTAssertEqual(try route("POST", "/v1/dashboard/tokens", #"{"name":"office"}"#)?.get(), .makeDashboardToken(name: "office"))
        XCTAssertEqual(try route("GET", "/v1/dashboard/tokens")?.get(), .dashboardTokens)
        XCTAssertEqual(try route("POST", "/v1/dashboard/tokens/a1b2c3d4/revoke")?.get(), .revokeDashboardToken("a1b2c3d4"))
        for (method, path, body, status) in [
            ("DELETE", "/v1/dashboard/tokens", "", 405), ("GET", "/v1/dashboard/tokens/x/revoke", "", 405),
            ("POST", "/v1/dashboard/tokens", #"{"name":""}"#, 400), ("POST", "/v1/dashboard/tokens", "[", 400),
            ("POST", "/v1/dashboard/tokens", #"{"name":"a/b"}"#, 400),
            ("GET", "/v1/dashboard/other", "", 404),
        ] {
            guard case .failure(let f)? = route(method, path, body) else { return XCTFail("\(method) \(path) \(body) accepted") }
            XCTAssertEqual(f.status, status, "\(method) \(path) \(body)")
        }
    }

    func testJournalQueryAndCookies() throws {
        let uuid = UUID().uuidString
        let q = try DashboardServer.journalQuery([
            ("order", uuid), ("terminal", "till"), ("from", "1000"), ("to", "2000"), ("before", "9"), ("limit", "5"),
        ]).get()
        XCTAssertEqual(
            q, DashboardJournalQuery(order: uuid, terminal: "till", fromMillis: 1000, toMillis: 2000, beforeSeq: 9, limit: 5))
        XCTAssertEqual(try DashboardServer.journalQuery([("order", ""), ("terminal", "")]).get(), DashboardJournalQuery())
        for bad in [("order", "x"), ("from", "-1"), ("to", "soon"), ("limit", "0"), ("limit", "1001")] {
            guard case .failure(let f) = DashboardServer.journalQuery([bad]) else { return XCTFail("\(bad) accepted") }
            XCTAssertEqual(f.status, 400)
        }
        XCTAssertEqual(DashboardServer.cookie("ordersync_session", in: "a=1; ordersync_session=abc; b=2"), "abc")
        XCTAssertNil(DashboardServer.cookie("ordersync_session", in: "xordersync_session=abc"))
        XCTAssertNil(DashboardServer.cookie("ordersync_session", in: nil))
    }

    func testMasterServesTheDashboardBehindATokenOverTCP() throws {
        let port = try freePort()
        let master = try RunningNode(
            role: .master, dataDirectory: dataDirectory, name: "front",
            configure: { $0.httpListen = MetricsAddress(host: "127.0.0.1", port: port) })
        defer { master.stop() }
        let api = LocalAPIClient(dataDirectory: master.dataDirectory)
        let uuid = UUID().uuidString
        let created = try api.send(
            method: "POST", path: "/v1/orders",
            body: .object(JSONObject([("uuid", .string(uuid)), ("customerName", .string("<b>Ann</b>"))])))
        XCTAssertEqual(created.status, 201, "\(created.body)")

        // The page itself needs no login, and comes with its security headers.
        let page = try httpExchange(port: port, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        XCTAssertTrue(page.hasPrefix("HTTP/1.1 200 OK\r\n"), page)
        XCTAssertTrue(page.contains("Content-Security-Policy: default-src 'self'; frame-ancestors 'none'"), page)
        XCTAssertTrue(page.contains("X-Content-Type-Options: nosniff\r\n") && page.contains("Referrer-Policy: no-referrer\r\n"), page)
        // Data: 401 without a token.
        for path in ["/api/status", "/api/orders", "/api/journal", "/api/rejections", "/api/events", "/api/changes", "/api/orders/\(uuid)"]
        {
            let r = try httpExchange(port: port, "GET \(path) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            XCTAssertTrue(r.hasPrefix("HTTP/1.1 401 "), "\(path): \(r)")
            XCTAssertFalse(r.contains("Ann"), r)
        }

        let made = try api.send(method: "POST", path: "/v1/dashboard/tokens", body: .object(JSONObject([("name", .string("office"))])))
        XCTAssertEqual(made.status, 201, "\(made.body)")
        let secret = try XCTUnwrap(made.body.objectValue?["token"]?.stringValue)
        XCTAssertEqual(made.body.objectValue?["url"]?.stringValue, "http://127.0.0.1:\(port)/#token=\(secret)")
        let listed = try api.send(method: "GET", path: "/v1/dashboard/tokens")
        XCTAssertFalse(listed.body.serialized().contains(secret), "\(listed.body)")
        XCTAssertEqual(
            try api.send(method: "POST", path: "/v1/dashboard/tokens", body: .object(JSONObject([("name", .string("office"))]))).status, 409
        )

        let bearer = "Authorization: Bearer \(secret)\r\n"
        let orders = try httpExchange(port: port, "GET /api/orders HTTP/1.1\r\nHost: x\r\n\(bearer)Connection: close\r\n\r\n")
        XCTAssertTrue(orders.hasPrefix("HTTP/1.1 200 OK\r\n") && orders.contains(uuid), orders)
        let changes = try httpExchange(port: port, "GET /api/changes?since=0 HTTP/1.1\r\nHost: x\r\n\(bearer)Connection: close\r\n\r\n")
        XCTAssertTrue(changes.hasPrefix("HTTP/1.1 200 OK\r\n") && changes.contains(uuid) && changes.contains("\"last\":1"), changes)
        let journal = try httpExchange(
            port: port, "GET /api/journal?order=\(uuid)&terminal=front HTTP/1.1\r\nHost: x\r\n\(bearer)Connection: close\r\n\r\n")
        XCTAssertTrue(journal.contains("\"seq\":1") && journal.contains("\"operation\":\"create\""), journal)
        let none = try httpExchange(
            port: port, "GET /api/journal?terminal=nobody HTTP/1.1\r\nHost: x\r\n\(bearer)Connection: close\r\n\r\n")
        XCTAssertTrue(none.contains("{\"entries\":[]}"), none)
        let later = try httpExchange(
            port: port,
            "GET /api/journal?from=\(Int64(Date().timeIntervalSince1970 * 1000) + 60_000) HTTP/1.1\r\nHost: x\r\n\(bearer)Connection: close\r\n\r\n"
        )
        XCTAssertTrue(later.contains("{\"entries\":[]}"), later)
        let write = try httpExchange(port: port, "DELETE /api/orders/\(uuid) HTTP/1.1\r\nHost: x\r\n\(bearer)Connection: close\r\n\r\n")
        XCTAssertTrue(write.hasPrefix("HTTP/1.1 405 ") && write.contains("Allow: GET\r\n"), "read-only: \(write)")

        // The token for a session cookie (HttpOnly, SameSite=Strict).
        let body = "{\"token\":\"\(secret)\"}"
        let login = try httpExchange(
            port: port,
            "POST /api/session HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
        )
        XCTAssertTrue(login.hasPrefix("HTTP/1.1 204 "), login)
        let cookieLine = try XCTUnwrap(login.components(separatedBy: "\r\n").first { $0.hasPrefix("Set-Cookie: ") })
        XCTAssertTrue(cookieLine.contains("; HttpOnly; SameSite=Strict"), cookieLine)
        let session = String(cookieLine.dropFirst("Set-Cookie: ".count).prefix { $0 != ";" })
        let status = try httpExchange(port: port, "GET /api/status HTTP/1.1\r\nHost: x\r\nCookie: \(session)\r\nConnection: close\r\n\r\n")
        XCTAssertTrue(status.hasPrefix("HTTP/1.1 200 OK\r\n") && status.contains("\"role\":\"master\""), status)
        let wrong = "{\"token\":\"\(String(repeating: "a", count: 64))\"}"
        let refused = try httpExchange(
            port: port,
            "POST /api/session HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: \(wrong.utf8.count)\r\nConnection: close\r\n\r\n\(wrong)"
        )
        XCTAssertTrue(refused.hasPrefix("HTTP/1.1 401 "), refused)

        // An event stream of the token: a status event now; the revocation ends it at once.
        let stream = try TCPSocket.connect(host: "127.0.0.1", port: port)
        defer { stream.close() }
        try stream.writeAll(Array("GET /api/events HTTP/1.1\r\nHost: x\r\nCookie: \(session)\r\n\r\n".utf8), timeout: .seconds(10))
        var seen = ""
        while !seen.contains("event: status\n") {
            let chunk = try stream.readSome(timeout: .seconds(10))
            XCTAssertFalse(chunk.isEmpty, "the stream ended early: \(seen)")
            if chunk.isEmpty { return }
            seen += String(decoding: chunk, as: UTF8.self)
        }
        XCTAssertTrue(seen.hasPrefix("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream"), seen)
        let second = UUID().uuidString
        XCTAssertEqual(
            try api.send(
                method: "POST", path: "/v1/orders",
                body: .object(JSONObject([("uuid", .string(second)), ("customerName", .string("Bo"))]))
            ).status, 201)
        // A refused update: the open pages are told to reload their refused operations.
        let refusedUpdate = try api.send(
            method: "PATCH", path: "/v1/orders/\(UUID().uuidString)", body: .object(JSONObject([("customerName", .string("Cy"))])))
        XCTAssertEqual(refusedUpdate.status, 404, "\(refusedUpdate.body)")
        while !seen.contains("event: refusals\n") {
            let chunk = try stream.readSome(timeout: .seconds(10))
            XCTAssertFalse(chunk.isEmpty, "the stream ended early: \(seen)")
            if chunk.isEmpty { return }
            seen += String(decoding: chunk, as: UTF8.self)
        }
        let revoked = try api.send(method: "POST", path: "/v1/dashboard/tokens/office/revoke")
        XCTAssertEqual(revoked.status, 200, "\(revoked.body)")
        while true {
            let chunk = try stream.readSome(timeout: .seconds(10))
            if chunk.isEmpty { break }
            seen += String(decoding: chunk, as: UTF8.self)
        }
        XCTAssertTrue(seen.contains("event: refusals\ndata: {\"refused\":1}\n\n"), seen)
        XCTAssertTrue(seen.hasSuffix("event: revoked\ndata: {}\n\n"), seen)
        for auth in [bearer, "Cookie: \(session)\r\n"] {
            let after = try httpExchange(port: port, "GET /api/orders HTTP/1.1\r\nHost: x\r\n\(auth)Connection: close\r\n\r\n")
            XCTAssertTrue(after.hasPrefix("HTTP/1.1 401 "), after)
        }
        XCTAssertEqual(try api.send(method: "POST", path: "/v1/dashboard/tokens/office/revoke").status, 404)
    }

    func testASlaveServesThePageAndSaysItIsAStandby() throws {
        let port = try freePort()
        let nobody = try freePort()
        let slave = try RunningNode(
            role: .slave, dataDirectory: dataDirectory, name: "counter", masterURL: MasterURL(host: "127.0.0.1", port: nobody),
            configure: {
                $0.pairingCode = PairingCode.generate()
                $0.httpListen = MetricsAddress(host: "127.0.0.1", port: port)
            })
        defer { slave.stop() }
        let page = try httpExchange(port: port, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        XCTAssertTrue(page.hasPrefix("HTTP/1.1 200 OK\r\n"), page)
        let body = "{\"token\":\"\(String(repeating: "a", count: 64))\"}"
        for request in [
            "GET /api/status HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(String(repeating: "a", count: 64))\r\nConnection: close\r\n\r\n",
            "POST /api/session HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)",
        ] {
            let answer = try httpExchange(port: port, request)
            XCTAssertTrue(answer.hasPrefix("HTTP/1.1 503 ") && answer.contains("\"code\":\"standby\""), answer)
        }
    }
}
