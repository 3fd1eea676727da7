import HTTP1
import XCTest

final class HTTPResponseTests: XCTestCase {
    private func parseAllWays(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) throws -> [HTTPResponse] {
        var whole = HTTPResponseParser()
        whole.append(bytes)
        var wholeResponses: [HTTPResponse] = []
        while let response = try whole.nextResponse() { wholeResponses.append(response) }
        if let last = try whole.finish() { wholeResponses.append(last) }

        var trickle = HTTPResponseParser()
        var trickleResponses: [HTTPResponse] = []
        for byte in bytes {
            trickle.append([byte])
            while let response = try trickle.nextResponse() { trickleResponses.append(response) }
        }
        if let last = try trickle.finish() { trickleResponses.append(last) }
        XCTAssertEqual(wholeResponses.map(\.status), trickleResponses.map(\.status), file: file, line: line)
        XCTAssertEqual(wholeResponses.map(\.body), trickleResponses.map(\.body), file: file, line: line)
        return wholeResponses
    }

    func testSerializeAlwaysSendsContentLength() {
        let response = HTTPResponse.json(status: 201, #"{"ok":true}"#)
        XCTAssertEqual(
            String(decoding: response.serialize(), as: UTF8.self),
            "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"ok\":true}")
        XCTAssertEqual(
            String(decoding: HTTPResponse(status: 200).serialize(), as: UTF8.self),
            "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        var stale = HTTPResponse(status: 200, headers: ["Content-Length": "99"], body: [1])
        stale.headers.add(name: "X-Seq", value: "4")
        XCTAssertEqual(
            String(decoding: stale.serialize(), as: UTF8.self),
            "HTTP/1.1 200 OK\r\nX-Seq: 4\r\nContent-Length: 1\r\n\r\n\u{1}")
        XCTAssertEqual(
            String(decoding: HTTPResponse(status: 204, body: [1, 2]).serialize(), as: UTF8.self),
            "HTTP/1.1 204 No Content\r\n\r\n", "204 carries neither Content-Length nor a body")
    }

    func testErrorResponseIsJSONAndClosesTheConnection() throws {
        let response = HTTPResponse(error: .headerFieldsTooLarge("too \"big\"\n"))
        XCTAssertEqual(response.status, 431)
        XCTAssertEqual(response.reason, "Request Header Fields Too Large")
        XCTAssertTrue(response.closesConnection)
        XCTAssertEqual(
            String(decoding: response.body, as: UTF8.self),
            #"{"error":{"status":431,"message":"too \"big\"\n"}}"#)
    }

    func testParsesPipelinedResponsesWholeAndOneByteAtATime() throws {
        let bytes =
            HTTPResponse.json(#"{"a":1}"#).serialize()
            + HTTPResponse(status: 204).serialize()
            + HTTPResponse(status: 404, headers: ["X-Reason": "gone"], body: Array("missing".utf8)).serialize()
        let responses = try parseAllWays(bytes)
        XCTAssertEqual(responses.map(\.status), [200, 204, 404])
        XCTAssertEqual(responses.map(\.reason), ["OK", "No Content", "Not Found"])
        XCTAssertEqual(responses[0].body, Array(#"{"a":1}"#.utf8))
        XCTAssertEqual(responses[2].headers["x-reason"], "gone")
    }

    func testBodyDelimitedByConnectionClose() throws {
        let responses = try parseAllWays(Array("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end".utf8))
        XCTAssertEqual(responses.map { String(decoding: $0.body, as: UTF8.self) }, ["until the end"])
    }

    func testTruncatedAndMalformedResponsesThrow() {
        var truncated = HTTPResponseParser()
        truncated.append(Array("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc".utf8))
        XCTAssertNil(try truncated.nextResponse())
        XCTAssertThrowsError(try truncated.finish()) { error in
            XCTAssertEqual((error as? HTTPError)?.status, 502)
        }
        for text in [
            "HTTP/1.1 2000 OK\r\n\r\n", "ICY 200 OK\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
        ] {
            var parser = HTTPResponseParser()
            parser.append(Array(text.utf8))
            XCTAssertThrowsError(try parser.nextResponse(), text)
        }
        var huge = HTTPResponseParser(maxHeaderBytes: 64)
        huge.append(Array(("HTTP/1.1 200 OK\r\nX: " + String(repeating: "z", count: 100)).utf8))
        XCTAssertThrowsError(try huge.nextResponse())
        var emptyClose = HTTPResponseParser()
        XCTAssertNil(try emptyClose.finish(), "a connection closed between responses is not an error")
    }

    func testHeadersLookupIsCaseInsensitive() {
        var headers: HTTPHeaders = ["Connection": "keep-alive, Upgrade"]
        headers.add(name: "set-cookie", value: "a")
        headers.add(name: "Set-Cookie", value: "b")
        XCTAssertEqual(headers["SET-COOKIE"], "a")
        XCTAssertEqual(headers.values("set-cookie"), ["a", "b"])
        XCTAssertEqual(headers.tokens("connection"), ["keep-alive", "upgrade"])
        headers.replaceOrAdd(name: "SET-cookie", value: "c")
        XCTAssertEqual(headers.values("Set-Cookie"), ["c"])
        headers.remove(name: "connection")
        XCTAssertNil(headers["Connection"])
        XCTAssertEqual(HTTPHeaders([("A", "1")]), HTTPHeaders([("a", "1")]))
    }
}
