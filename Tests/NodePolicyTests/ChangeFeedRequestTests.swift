import HTTP1
import XCTest

@testable import NodePolicy

final class ChangeFeedRequestTests: XCTestCase {
    func decode(_ query: [(String, String)], _ headers: HTTPHeaders = HTTPHeaders(), method: String = "GET")
        -> Result<ChangesRequest, LocalAPIRoute.Failure>?
    {
        ChangesRequest.decode(method: method, path: "/v1/changes", query: query, headers: headers)
    }

    func testDefaultsAndQuery() throws {
        XCTAssertNil(ChangesRequest.decode(method: "GET", path: "/v1/orders", query: [], headers: HTTPHeaders()))
        XCTAssertEqual(try decode([])?.get(), ChangesRequest())
        let r = try decode([("since", "42"), ("limit", "1000"), ("timeout", "60"), ("epoch", "e")])?.get()
        XCTAssertEqual(r, ChangesRequest(since: 42, limit: 1000, timeout: 60, epoch: "e", stream: false))
    }

    func testEventStreamAndLastEventIDWins() throws {
        let r = try decode([("since", "3")], HTTPHeaders([("Accept", "text/event-stream"), ("Last-Event-ID", " 17 ")]))?.get()
        XCTAssertEqual(r?.stream, true)
        XCTAssertEqual(r?.since, 17)
    }

    func testRefusals() {
        for q in [("since", "-1"), ("since", "x"), ("limit", "0"), ("limit", "1001"), ("timeout", "61")] {
            guard case .failure(let f)? = decode([q]) else { return XCTFail("\(q) accepted") }
            XCTAssertEqual(f.status, 400)
            XCTAssertEqual(f.code, "invalid_query")
        }
        guard case .failure(let f)? = decode([], HTTPHeaders([("Last-Event-ID", "abc")])) else { return XCTFail("bad id accepted") }
        XCTAssertEqual(f.status, 400)
        // A bad `since` is refused even when Last-Event-ID (which wins) is there.
        guard case .failure(let s)? = decode([("since", "-1")], HTTPHeaders([("Last-Event-ID", "0")])) else {
            return XCTFail("a bad since beside Last-Event-ID was accepted")
        }
        XCTAssertEqual(s.code, "invalid_query")
        // An id past Int64 is a cursor ahead of every feed (answered 410 by the feed).
        guard case .success(let far)? = decode([], HTTPHeaders([("Last-Event-ID", "30680186678998510295")])) else {
            return XCTFail("a long Last-Event-ID was refused")
        }
        XCTAssertEqual(far.since, Int64.max)
        guard case .failure(let m)? = decode([], method: "POST") else { return XCTFail("POST accepted") }
        XCTAssertEqual(m.status, 405)
        guard case .success(let head)? = decode([("since", "2")], method: "HEAD") else { return XCTFail("HEAD refused") }
        XCTAssertEqual(head.since, 2)
    }

    func testEventStreamParserWholeAndByteByByte() {
        let text = ": keepalive\n\nid: 1\nevent: change\ndata: {\"seq\":1}\n\nid: 2\r\nevent: change\r\ndata: a\r\ndata: b\r\n\r\n"
        var whole = ServerSentEventParser()
        let all = whole.append(Array(text.utf8))
        XCTAssertEqual(
            all,
            [
                .init(id: "1", event: "change", data: "{\"seq\":1}"),
                .init(id: "2", event: "change", data: "a\nb"),
            ])
        var bytewise = ServerSentEventParser()
        var events: [ServerSentEventParser.Event] = []
        for b in text.utf8 { events += bytewise.append([b]) }
        XCTAssertEqual(events, all)
    }
}
