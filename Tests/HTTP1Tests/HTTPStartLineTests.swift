import HTTP1
import XCTest

final class HTTPStartLineTests: XCTestCase {
    private func requestLine(_ text: String) throws(HTTPError) -> HTTPRequestLine {
        try HTTPRequestLine(parsing: Array(text.utf8))
    }

    private func statusLine(_ text: String) throws(HTTPError) -> HTTPStatusLine {
        try HTTPStatusLine(parsing: Array(text.utf8))
    }

    func testRequestLine() throws {
        let line = try requestLine("GET /a?b=c HTTP/1.0")
        XCTAssertEqual(line.method, "GET")
        XCTAssertEqual(line.target, "/a?b=c")
        XCTAssertEqual(line.version, .http1_0)
        for bad in [
            "GET  / HTTP/1.1", "GET / HTTP/1.1 ", "G(T / HTTP/1.1", "GET /\u{7F} HTTP/1.1",
            "GET /é HTTP/1.1", "GET / HTTP/11", "GET / http/1.1", "GET /", "",
        ] {
            XCTAssertThrowsError(try requestLine(bad), bad) { error in
                XCTAssertEqual((error as? HTTPError)?.status, 400, bad)
            }
        }
    }

    func testStatusLine() throws {
        let line = try statusLine("HTTP/1.1 101 Switching Protocols")
        XCTAssertEqual(line.version, .http1_1)
        XCTAssertEqual(line.status, 101)
        XCTAssertEqual(line.reason, "Switching Protocols")
        XCTAssertEqual(try statusLine("HTTP/1.1 204").reason, "")
        XCTAssertEqual(try statusLine("HTTP/1.1 200 \tOK\u{E9}").reason, "\tOK\u{E9}")
        for bad in ["HTTP/1.1 20 OK", "HTTP/1.1 2000 OK", "HTTP/1.1 2x0 OK", "HTTP/1.1 200 O\u{1}K", "ICY 200 OK"] {
            XCTAssertThrowsError(try statusLine(bad), bad)
        }
    }

    func testTokens() {
        XCTAssertTrue(HTTPSyntax.isToken("ordersync.v1"))
        XCTAssertFalse(HTTPSyntax.isToken(""))
        XCTAssertFalse(HTTPSyntax.isToken("a b"))
        XCTAssertFalse(HTTPSyntax.isToken("a,b"))
    }
}
