import HTTP1
import XCTest

final class HTTPRequestParserTests: XCTestCase {
    private let post = Array(
        "POST /orders/abc%2Fdef?page=2&name=J%C3%BCrgen+M&flag HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{\"op\":\"add\"}\n"
            .utf8)

    /// Feeds `bytes` whole, then one byte at a time, and checks both give the same requests.
    private func parseAllWays(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) throws -> [HTTPRequest] {
        var whole = HTTPRequestParser()
        whole.append(bytes)
        var wholeRequests: [HTTPRequest] = []
        while let request = try whole.nextRequest() { wholeRequests.append(request) }

        var trickle = HTTPRequestParser()
        var trickleRequests: [HTTPRequest] = []
        for byte in bytes {
            trickle.append([byte])
            while let request = try trickle.nextRequest() { trickleRequests.append(request) }
        }
        XCTAssertEqual(wholeRequests.map(summary), trickleRequests.map(summary), file: file, line: line)
        XCTAssertEqual(whole.bufferedByteCount, 0, file: file, line: line)
        XCTAssertEqual(trickle.bufferedByteCount, 0, file: file, line: line)
        return wholeRequests
    }

    private func summary(_ request: HTTPRequest) -> String {
        let query = request.query.map { "\($0.0)=\($0.1)" }.joined(separator: "&")
        return "\(request.method) \(request.path) [\(query)] \(request.version) keepAlive=\(request.keepAlive) "
            + "\(request.headers.count)h body=\(String(decoding: request.body, as: UTF8.self))"
    }

    func testPostWithBodyWholeAndOneByteAtATime() throws {
        let requests = try parseAllWays(post)
        XCTAssertEqual(requests.count, 1)
        let request = try XCTUnwrap(requests.first)
        XCTAssertEqual(request.method, "POST")
        XCTAssertEqual(request.target, "/orders/abc%2Fdef?page=2&name=J%C3%BCrgen+M&flag")
        XCTAssertEqual(request.path, "/orders/abc/def")
        XCTAssertEqual(request.query.map(\.0), ["page", "name", "flag"])
        XCTAssertEqual(request.query.map(\.1), ["2", "Jürgen M", ""])
        XCTAssertEqual(request.queryValue("name"), "Jürgen M")
        XCTAssertEqual(request.headers["content-TYPE"], "application/json")
        XCTAssertEqual(request.body, Array("{\"op\":\"add\"}\n".utf8))
        XCTAssertTrue(request.keepAlive)
        XCTAssertEqual(request.version, .http1_1)
    }

    func testPipelinedRequestsComeOutInOrder() throws {
        let get = Array("GET /status HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        let close = Array("DELETE /orders/1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8)
        let requests = try parseAllWays(get + post + close)
        XCTAssertEqual(requests.map(\.method), ["GET", "POST", "DELETE"])
        XCTAssertEqual(requests.map(\.keepAlive), [true, true, false])
        XCTAssertEqual(requests[1].body.count, 13)
    }

    func testParseReportsConsumedBytesForPipelining() throws {
        let first = Array("GET /a HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        var buffer = first + post + Array("GET /c".utf8)
        var parser = HTTPRequestParser()
        guard case .request(let a, let consumedA) = try parser.parse(buffer) else {
            return XCTFail("first request expected")
        }
        XCTAssertEqual(a.path, "/a")
        XCTAssertEqual(consumedA, first.count)
        buffer.removeFirst(consumedA)
        guard case .request(let b, let consumedB) = try parser.parse(buffer) else {
            return XCTFail("second request expected")
        }
        XCTAssertEqual(b.method, "POST")
        XCTAssertEqual(consumedB, post.count)
        buffer.removeFirst(consumedB)
        guard case .needMoreData = try parser.parse(buffer) else {
            return XCTFail("a partial request needs more data")
        }
        buffer += Array(" HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        guard case .request(let c, _) = try parser.parse(buffer) else {
            return XCTFail("third request expected")
        }
        XCTAssertEqual(c.path, "/c")
    }

    func testKeepAliveRules() throws {
        func keepAlive(_ head: String) throws -> Bool {
            var parser = HTTPRequestParser()
            parser.append(Array(head.utf8))
            return try XCTUnwrap(try parser.nextRequest()).keepAlive
        }
        XCTAssertTrue(try keepAlive("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
        XCTAssertFalse(try keepAlive("GET / HTTP/1.1\r\nHost: x\r\nConnection: Close\r\n\r\n"))
        XCTAssertFalse(try keepAlive("GET / HTTP/1.1\r\nHost: x\r\nConnection: upgrade, close\r\n\r\n"))
        XCTAssertFalse(try keepAlive("GET / HTTP/1.0\r\n\r\n"))
        XCTAssertTrue(try keepAlive("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"))
    }

    func testToleratesLeadingEmptyLinesAndBareLineFeeds() throws {
        let requests = try parseAllWays(Array("\r\n\r\nGET /x HTTP/1.1\nHost: y\nContent-Length: 2\n\nhi".utf8))
        XCTAssertEqual(requests.map(\.path), ["/x"])
        XCTAssertEqual(requests.first?.body, Array("hi".utf8))
    }

    private func expectError(
        _ text: String, status: Int, limits: HTTPRequestParser.Limits = .init(),
        file: StaticString = #filePath, line: UInt = #line
    ) {
        for trickle in [false, true] {
            var parser = HTTPRequestParser(limits: limits)
            var thrown: HTTPError?
            do {
                if trickle {
                    for byte in text.utf8 {
                        parser.append([byte])
                        _ = try parser.nextRequest()
                    }
                } else {
                    parser.append(Array(text.utf8))
                    _ = try parser.nextRequest()
                }
            } catch let error as HTTPError {
                thrown = error
            } catch {
                XCTFail("unexpected \(error)", file: file, line: line)
            }
            XCTAssertEqual(thrown?.status, status, "trickle=\(trickle): \(text.prefix(60))", file: file, line: line)
            // After an error the parser keeps failing: the stream cannot be framed any more.
            parser.append(Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
            XCTAssertThrowsError(try parser.nextRequest(), file: file, line: line)
        }
    }

    func testLimitsAndMalformedRequests() {
        let bigHeader = "GET / HTTP/1.1\r\nHost: x\r\nX-Filler: " + String(repeating: "a", count: 17 << 10) + "\r\n\r\n"
        expectError(bigHeader, status: 431)
        expectError("GET / HTTP/1.1\r\nHost: x\r\nX: " + String(repeating: "b", count: 20 << 10), status: 431)
        expectError(String(repeating: "\r\n", count: 9000), status: 431)
        expectError("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1048577\r\n\r\n", status: 413)
        expectError(
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\n", status: 413,
            limits: .init(maxHeaderBytes: 1024, maxBodyBytes: 10))
        expectError("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", status: 501)
        expectError("GET / HTTP/1.1\r\n\r\n", status: 400)
        expectError("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", status: 400)
        expectError("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1x\r\n\r\n", status: 400)
        expectError("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", status: 400)
        expectError("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", status: 400)
        expectError("GET / HTTP/1.1\r\nHost : x\r\n\r\n", status: 400)
        expectError("GET / HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n continued\r\n\r\n", status: 400)
        expectError("GET / HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n", status: 400)
        expectError("GET  / HTTP/1.1\r\nHost: x\r\n\r\n", status: 400)
        expectError("GET / HTTP/2.0\r\nHost: x\r\n\r\n", status: 505)
        expectError("GET / HTTZ/1.1\r\nHost: x\r\n\r\n", status: 400)
        expectError("GET /%zz HTTP/1.1\r\nHost: x\r\n\r\n", status: 400)
        expectError("GET /%C3 HTTP/1.1\r\nHost: x\r\n\r\n", status: 400)
        expectError("GET orders HTTP/1.1\r\nHost: x\r\n\r\n", status: 400)
    }

    func testRepeatedIdenticalContentLengthIsAccepted() throws {
        let requests = try parseAllWays(Array("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2, 2\r\n\r\nok".utf8))
        XCTAssertEqual(requests.first?.body, Array("ok".utf8))
    }

    func testBodyAtTheLimitIsAccepted() throws {
        var parser = HTTPRequestParser()
        let body = [UInt8](repeating: 0x41, count: 1 << 20)
        parser.append(Array("PUT /big HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.count)\r\n\r\n".utf8))
        XCTAssertNil(try parser.nextRequest())
        parser.append(body)
        XCTAssertEqual(try parser.nextRequest()?.body.count, body.count)
    }

    func testAbsoluteFormTargetAndQueryParsing() throws {
        let target = try RequestTarget(parsing: "http://localhost:8080/orders?per=5&per=6")
        XCTAssertEqual(target.path, "/orders")
        XCTAssertEqual(target.query.map(\.1), ["5", "6"])
        XCTAssertEqual(try RequestTarget.parseQuery("a=%26&b=c%3Dd&&=e").map { "\($0.0)|\($0.1)" }, ["a|&", "b|c=d", "|e"])
        XCTAssertEqual(try RequestTarget.percentDecode("a+b%20c", plusIsSpace: false), "a+b c")
    }

    func testRequestSerializationRoundTrips() throws {
        var headers = HTTPHeaders()
        headers.add(name: "Accept", value: "application/json")
        let request = try HTTPRequest(
            method: "PATCH", target: "/orders/x?y=1", headers: headers,
            body: Array("{\"a\":1}".utf8), keepAlive: false)
        let parsed = try parseAllWays(request.serialize())
        XCTAssertEqual(parsed.count, 1)
        XCTAssertEqual(parsed.first?.headers["host"], "localhost")
        XCTAssertEqual(parsed.first?.headers["accept"], "application/json")
        XCTAssertEqual(parsed.first?.body, request.body)
        XCTAssertEqual(parsed.first?.keepAlive, false)
        XCTAssertEqual(parsed.first?.queryValue("y"), "1")
    }
}
