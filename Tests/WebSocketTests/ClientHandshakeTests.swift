import XCTest

@testable import WebSocket

final class ClientHandshakeTests: XCTestCase {
    private let key = "dGhlIHNhbXBsZSBub25jZQ=="

    private func response(_ lines: [String]) -> [UInt8] {
        Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8)
    }

    private var goodLines: [String] {
        [
            "HTTP/1.1 101 Switching Protocols",
            "Upgrade: websocket",
            "Connection: Upgrade",
            "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=",
        ]
    }

    private func check(_ lines: [String], subprotocols: [String] = []) -> ClientHandshakeResult {
        var handshake = ClientHandshake(host: "127.0.0.1:9000", path: "/", key: key, subprotocols: subprotocols)
        return handshake.parseResponse(response(lines))
    }

    private func assertFails(
        _ lines: [String], subprotocols: [String] = [], mentioning text: String,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        guard case .failed(let error) = check(lines, subprotocols: subprotocols) else {
            return XCTFail("accepted \(lines)", file: file, line: line)
        }
        XCTAssertEqual(error.code, .handshakeFailed, file: file, line: line)
        XCTAssertTrue(error.message.contains(text), error.message, file: file, line: line)
    }

    func testMakeKeyIsBase64OfSixteenBytes() {
        var generator = SplitMix64(seed: 9)
        let first = ClientHandshake.makeKey(using: &generator)
        XCTAssertEqual(Base64.decode(first)?.count, 16)
        XCTAssertNotEqual(first, ClientHandshake.makeKey(using: &generator))
        XCTAssertEqual(Base64.decode(ClientHandshake.makeKey())?.count, 16)
    }

    func testRequestIsAcceptedByOurServerAndResponseByOurClient() {
        var client = ClientHandshake(
            host: "10.0.0.1:8080", path: "/sync", key: ClientHandshake.makeKey(),
            subprotocols: ["ordersync.v1", "chat"])
        let text = String(decoding: client.requestBytes, as: UTF8.self)
        XCTAssertTrue(text.hasPrefix("GET /sync HTTP/1.1\r\nHost: 10.0.0.1:8080\r\n"))
        XCTAssertTrue(text.contains("Sec-WebSocket-Protocol: ordersync.v1, chat\r\n"))

        var server = ServerHandshakeParser()
        guard case .accepted(let request, _) = server.parse(client.requestBytes) else { return XCTFail() }
        XCTAssertEqual(request.key, client.key)
        let reply = ServerHandshake.response(for: request, subprotocol: request.selectSubprotocol(from: ["chat"]))
        let pipelined = serverFrame(.text, Array("welcome".utf8))

        for (name, chunks) in chunkings(of: [reply, pipelined]) {
            var handshake = client
            var received: [UInt8] = []
            var outcome = ClientHandshakeResult.incomplete
            for chunk in chunks {
                received += chunk
                outcome = handshake.parseResponse(received)
                if case .accepted = outcome { break }
                XCTAssertEqual(outcome, .incomplete, name)
            }
            XCTAssertEqual(outcome, .accepted(subprotocol: "chat", consumed: reply.count), name)
        }
        XCTAssertEqual(client.parseResponse(reply + pipelined), .accepted(subprotocol: "chat", consumed: reply.count))
    }

    func testAcceptsCaseVariantsAndNoSubprotocol() {
        XCTAssertEqual(check(goodLines), .accepted(subprotocol: nil, consumed: response(goodLines).count))
        var lines = goodLines
        lines[1] = "upgrade: WebSocket"
        lines[2] = "connection: keep-alive, upgrade"
        XCTAssertEqual(check(lines), .accepted(subprotocol: nil, consumed: response(lines).count))
    }

    func testRefusesWrongStatus() {
        var lines = goodLines
        lines[0] = "HTTP/1.1 200 OK"
        assertFails(lines, mentioning: "200")
        lines[0] = "HTTP/1.1 426 Upgrade Required"
        assertFails(lines, mentioning: "426")
        lines[0] = "HTTP/1.0 101 Switching Protocols"
        assertFails(lines, mentioning: "status line")
    }

    func testRefusesMissingUpgradeOrConnection() {
        assertFails(goodLines.filter { !$0.hasPrefix("Upgrade") }, mentioning: "Upgrade")
        var lines = goodLines
        lines[1] = "Upgrade: h2c"
        assertFails(lines, mentioning: "Upgrade")
        assertFails(goodLines.filter { !$0.hasPrefix("Connection") }, mentioning: "Connection")
    }

    func testRefusesWrongOrMissingAccept() {
        var lines = goodLines
        lines[3] = "Sec-WebSocket-Accept: AAAAAAAAAAAAAAAAAAAAAAAAAAA="
        assertFails(lines, mentioning: "Sec-WebSocket-Accept")
        assertFails(Array(goodLines.prefix(3)), mentioning: "missing")
    }

    func testRefusesUnrequestedExtensionOrSubprotocol() {
        assertFails(goodLines + ["Sec-WebSocket-Extensions: permessage-deflate"], mentioning: "extensions")
        assertFails(goodLines + ["Sec-WebSocket-Protocol: chat"], mentioning: "not offered")
        assertFails(goodLines + ["Sec-WebSocket-Protocol: other"], subprotocols: ["chat"], mentioning: "not offered")
        XCTAssertEqual(
            check(goodLines + ["Sec-WebSocket-Protocol: chat"], subprotocols: ["chat"]),
            .accepted(subprotocol: "chat", consumed: response(goodLines + ["Sec-WebSocket-Protocol: chat"]).count))
    }

    func testBoundedResponseHead() {
        var handshake = ClientHandshake(host: "h", key: key, configuration: WebSocketConfiguration(maxHandshakeHeaderBytes: 64))
        let endless = Array(("HTTP/1.1 101 Switching Protocols\r\n" + String(repeating: "X: y\r\n", count: 20)).utf8)
        guard case .failed(let error) = handshake.parseResponse(endless) else { return XCTFail() }
        XCTAssertEqual(error.code, .handshakeTooLarge)
    }
}
