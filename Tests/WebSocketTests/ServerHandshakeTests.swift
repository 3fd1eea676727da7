import XCTest

@testable import WebSocket

final class ServerHandshakeTests: XCTestCase {
    /// The sample request of RFC 6455 1.2/1.3.
    private let rfcRequest = """
        GET /chat HTTP/1.1\r
        Host: server.example.com\r
        Upgrade: websocket\r
        Connection: Upgrade\r
        Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r
        Origin: http://example.com\r
        Sec-WebSocket-Protocol: chat, superchat\r
        Sec-WebSocket-Version: 13\r
        \r

        """

    private func request(replacing field: String? = nil, with line: String? = nil, requestLine: String = "GET / HTTP/1.1") -> [UInt8] {
        var fields = [
            "Host: 127.0.0.1:8080",
            "Upgrade: websocket",
            "Connection: Upgrade",
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
            "Sec-WebSocket-Version: 13",
        ]
        if let field {
            fields.removeAll { $0.lowercased().hasPrefix(field.lowercased() + ":") }
        }
        if let line {
            fields.append(line)
        }
        return Array((([requestLine] + fields).joined(separator: "\r\n") + "\r\n\r\n").utf8)
    }

    private func parse(_ bytes: [UInt8], configuration: WebSocketConfiguration = WebSocketConfiguration()) -> ServerHandshakeResult {
        var parser = ServerHandshakeParser(configuration: configuration)
        return parser.parse(bytes)
    }

    private func assertRejected(
        _ bytes: [UInt8], status: Int, header: HTTPRejection.HTTPField? = nil,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        guard case .rejected(let rejection) = parse(bytes) else {
            return XCTFail("expected \(status), got \(parse(bytes))", file: file, line: line)
        }
        XCTAssertEqual(rejection.status, status, rejection.body, file: file, line: line)
        if let header {
            XCTAssertTrue(rejection.headers.contains(header), "\(rejection.headers)", file: file, line: line)
        }
        let text = String(decoding: rejection.bytes, as: UTF8.self)
        XCTAssertTrue(text.hasPrefix("HTTP/1.1 \(status) \(rejection.reason)\r\n"), text, file: file, line: line)
        XCTAssertTrue(text.contains("Connection: close\r\n"), file: file, line: line)
    }

    func testRFCAcceptVector() {
        XCTAssertEqual(WebSocketAccept.value(forKey: "dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    func testRFCRequestIsAcceptedWholeAndOneByteAtATime() {
        let bytes = Array(rfcRequest.utf8)
        guard case .accepted(let request, let consumed) = parse(bytes) else {
            return XCTFail("RFC request refused")
        }
        XCTAssertEqual(consumed, bytes.count)
        XCTAssertEqual(request.path, "/chat")
        XCTAssertEqual(request.host, "server.example.com")
        XCTAssertEqual(request.key, "dGhlIHNhbXBsZSBub25jZQ==")
        XCTAssertEqual(request.origin, "http://example.com")
        XCTAssertEqual(request.requestedSubprotocols, ["chat", "superchat"])
        XCTAssertEqual(request.headerValues(named: "sec-websocket-version"), ["13"])
        XCTAssertEqual(request.selectSubprotocol(from: ["superchat", "chat"]), "chat")

        var parser = ServerHandshakeParser()
        var received: [UInt8] = []
        for (index, byte) in bytes.enumerated() {
            received.append(byte)
            let result = parser.parse(received)
            if index < bytes.count - 1 {
                guard case .incomplete = result else { return XCTFail("finished early at byte \(index): \(result)") }
            } else {
                guard case .accepted(_, let consumed) = result else { return XCTFail("not accepted: \(result)") }
                XCTAssertEqual(consumed, bytes.count)
            }
        }
    }

    func testResponseForRFCRequest() {
        guard case .accepted(let request, _) = parse(Array(rfcRequest.utf8)) else { return XCTFail() }
        let response = String(decoding: ServerHandshake.response(for: request, subprotocol: "chat"), as: UTF8.self)
        XCTAssertEqual(
            response,
            """
            HTTP/1.1 101 Switching Protocols\r
            Upgrade: websocket\r
            Connection: Upgrade\r
            Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r
            Sec-WebSocket-Protocol: chat\r
            \r

            """)
        let plain = String(decoding: ServerHandshake.response(for: request, subprotocol: nil), as: UTF8.self)
        XCTAssertFalse(plain.contains("Sec-WebSocket-Protocol"))
        XCTAssertFalse(plain.contains("Sec-WebSocket-Extensions"))
    }

    func testPipelinedFrameIsLeftAfterConsumed() {
        let frame = clientFrame(.text, Array("hi".utf8))
        let bytes = request() + frame
        guard case .accepted(_, let consumed) = parse(bytes) else { return XCTFail() }
        XCTAssertEqual(Array(bytes[consumed...]), frame)
        var connection = WebSocketConnection(role: .server)
        XCTAssertEqual(connection.receive(Array(bytes[consumed...])), [.text("hi")])
    }

    func testTokenListsAreCaseInsensitive() {
        // Firefox sends "Connection: keep-alive, Upgrade".
        guard case .accepted = parse(request(replacing: "Connection", with: "Connection: keep-alive, Upgrade")) else {
            return XCTFail()
        }
        guard case .accepted = parse(request(replacing: "Upgrade", with: "upgrade: WebSocket")) else { return XCTFail() }
        guard case .accepted = parse(request(replacing: "Connection", with: "connection: UPGRADE")) else { return XCTFail() }
        guard
            case .accepted(let request, _) = parse(
                request(replacing: nil, with: "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits"))
        else {
            return XCTFail()
        }
        XCTAssertEqual(request.requestedExtensions, ["permessage-deflate; client_max_window_bits"])
    }

    func testRequestLineRejections() {
        assertRejected(request(requestLine: "POST / HTTP/1.1"), status: 405, header: .init("Allow", "GET"))
        assertRejected(request(requestLine: "GET / HTTP/1.0"), status: 505)
        assertRejected(request(requestLine: "GET / HTTP/2.0"), status: 505)
        assertRejected(request(requestLine: "GET / HTTP/1"), status: 400)
        assertRejected(request(requestLine: "GET /  HTTP/1.1"), status: 400)
        assertRejected(request(requestLine: "GET"), status: 400)
        assertRejected(request(requestLine: "GET http HTTP/1.1"), status: 400)
    }

    func testNonUpgradeRequestIsRefusedFromItsFirstLine() {
        var parser = ServerHandshakeParser()
        guard case .incomplete = parser.parse(Array("PUT / HT".utf8)) else { return XCTFail() }
        guard case .rejected(let rejection) = parser.parse(Array("PUT / HTTP/1.1\r\nHost".utf8)) else {
            return XCTFail("the request line alone decides")
        }
        XCTAssertEqual(rejection.status, 405)
    }

    func testHeaderRejections() {
        assertRejected(request(replacing: "Host"), status: 400)
        assertRejected(request(replacing: nil, with: "Host: other"), status: 400)
        assertRejected(request(replacing: "Upgrade"), status: 426, header: .init("Upgrade", "websocket"))
        assertRejected(request(replacing: "Upgrade", with: "Upgrade: h2c"), status: 426)
        assertRejected(request(replacing: "Connection"), status: 400)
        assertRejected(request(replacing: "Connection", with: "Connection: keep-alive"), status: 400)
        assertRejected(
            request(replacing: "Sec-WebSocket-Version", with: "Sec-WebSocket-Version: 8"),
            status: 426, header: .init("Sec-WebSocket-Version", "13"))
        assertRejected(request(replacing: "Sec-WebSocket-Version"), status: 426, header: .init("Sec-WebSocket-Version", "13"))
        assertRejected(request(replacing: "Sec-WebSocket-Key"), status: 400)
        assertRejected(request(replacing: nil, with: "Sec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAA=="), status: 400)
        // 15 bytes, 17 bytes, not base64, unpadded.
        assertRejected(request(replacing: "Sec-WebSocket-Key", with: "Sec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAA"), status: 400)
        assertRejected(request(replacing: "Sec-WebSocket-Key", with: "Sec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAAA="), status: 400)
        assertRejected(request(replacing: "Sec-WebSocket-Key", with: "Sec-WebSocket-Key: not base64 at all!!!!!=="), status: 400)
        assertRejected(request(replacing: "Sec-WebSocket-Key", with: "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ"), status: 400)
        assertRejected(request(replacing: nil, with: "Content-Length: 5"), status: 400)
        assertRejected(request(replacing: nil, with: "Sec-WebSocket-Protocol: chat, chat"), status: 400)
        assertRejected(request(replacing: nil, with: "Sec-WebSocket-Protocol: a b"), status: 400)
    }

    func testSyntaxRejections() {
        assertRejected(Array("GET / HTTP/1.1\r\nHost: x\nUpgrade: websocket\r\n\r\n".utf8), status: 400)
        assertRejected(request(replacing: nil, with: "Bad Name: value"), status: 400)
        assertRejected(request(replacing: nil, with: "Spaced : value"), status: 400)
        assertRejected(request(replacing: nil, with: "X-A: 1\r\n folded"), status: 400)
        assertRejected(request(replacing: nil, with: "X-Ctl: a\u{01}b"), status: 400)
    }

    func testHeaderBlockLimitGives431() {
        let configuration = WebSocketConfiguration(maxHandshakeHeaderBytes: 256)
        let big = request(replacing: nil, with: "X-Padding: " + String(repeating: "a", count: 300))
        guard case .rejected(let rejection) = parse(big, configuration: configuration) else { return XCTFail() }
        XCTAssertEqual(rejection.status, 431)

        // A header block that never ends is refused once the limit is reached, not buffered.
        var parser = ServerHandshakeParser(configuration: configuration)
        var received = Array("GET / HTTP/1.1\r\n".utf8)
        var result = parser.parse(received)
        while case .incomplete = result {
            received += Array("X-Slow: 1\r\n".utf8)
            result = parser.parse(received)
            XCTAssertLessThan(received.count, 300)
        }
        guard case .rejected(let slow) = result else { return XCTFail() }
        XCTAssertEqual(slow.status, 431)

        // Just under the limit is accepted.
        let fits = request()
        guard case .accepted = parse(fits, configuration: WebSocketConfiguration(maxHandshakeHeaderBytes: fits.count)) else {
            return XCTFail()
        }
    }

    func testBase64() {
        XCTAssertEqual(Base64.encode(Array("".utf8)), "")
        XCTAssertEqual(Base64.encode(Array("f".utf8)), "Zg==")
        XCTAssertEqual(Base64.encode(Array("fo".utf8)), "Zm8=")
        XCTAssertEqual(Base64.encode(Array("foobar".utf8)), "Zm9vYmFy")
        XCTAssertEqual(Base64.decode("Zm9vYg=="), Array("foob".utf8))
        XCTAssertEqual(Base64.decode("Zm9vYmE="), Array("fooba".utf8))
        XCTAssertNil(Base64.decode("Zm9vYh==")) // non-zero trailing bits
        XCTAssertNil(Base64.decode("Zg=a"))
        XCTAssertNil(Base64.decode("Z==="))
        XCTAssertNil(Base64.decode("Zm9v YmFy"))
        var generator = SplitMix64(seed: 3)
        for length in 0..<40 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            XCTAssertEqual(Base64.decode(Base64.encode(bytes)), bytes)
        }
    }
}
