import XCTest

@testable import WebSocket

final class WebSocketConnectionTests: XCTestCase {
    /// Runs `pieces` through a fresh server connection with every chunking and checks that each
    /// gives `expected`.
    private func assertServerEvents(
        _ pieces: [[UInt8]], configuration: WebSocketConfiguration = WebSocketConfiguration(),
        _ expected: [WebSocketEvent], file: StaticString = #filePath, line: UInt = #line
    ) {
        for (name, chunks) in chunkings(of: pieces) {
            var connection = WebSocketConnection(role: .server, configuration: configuration)
            XCTAssertEqual(feed(&connection, chunks), expected, name, file: file, line: line)
        }
    }

    private func failure(_ code: WebSocketError.Code, in events: [WebSocketEvent]) -> Bool {
        events.last?.failure?.code == code
    }

    func testMessagesAndAutomaticPong() {
        assertServerEvents(
            [clientFrame(.text, Array("Hello".utf8)), clientFrame(.binary, [1, 2, 3]), clientFrame(.ping, [7]), clientFrame(.pong, [8])],
            [.text("Hello"), .binary([1, 2, 3]), .send(serverFrame(.pong, [7])), .ping([7]), .pong([8])])
    }

    func testFragmentedMessageWithInterleavedPing() {
        let pieces = [
            clientFrame(.text, Array("κό".utf8), fin: false),
            clientFrame(.ping, Array("p".utf8)),
            clientFrame(.continuation, Array("σμ".utf8), fin: false),
            clientFrame(.pong, []),
            clientFrame(.continuation, Array("ε".utf8)),
            clientFrame(.binary, [9], fin: false),
            clientFrame(.continuation, [10]),
        ]
        assertServerEvents(
            pieces,
            [
                .send(serverFrame(.pong, Array("p".utf8))), .ping(Array("p".utf8)), .pong([]),
                .text("κόσμε"), .binary([9, 10]),
            ])
    }

    func testTextSplitInsideACharacterAcrossFragments() {
        let bytes = Array("€uro".utf8) // E2 82 AC ...
        let pieces = [clientFrame(.text, [bytes[0]], fin: false), clientFrame(.continuation, Array(bytes[1...]))]
        assertServerEvents(pieces, [.text("€uro")])
    }

    func testInvalidUTF8FailsInTheFirstFragmentBeforeTheFinalOneArrives() {
        // Autobahn 6.4.1/6.4.2: the invalid byte is in an early fragment; the final fragment
        // never needs to arrive.
        var connection = WebSocketConnection(role: .server)
        let first = clientFrame(.text, Array("κόσμε".utf8) + [0xF4, 0x90], fin: false)
        let events = connection.receive(first)
        XCTAssertEqual(events.count, 2)
        XCTAssertEqual(closeCode(in: events[0].sentBytes ?? [], sentBy: .server), 1007)
        XCTAssertTrue(failure(.invalidUTF8, in: events))
        XCTAssertEqual(connection.state, .closed)
        XCTAssertEqual(connection.receive(clientFrame(.continuation, [0x80, 0x80])), [])
    }

    func testInvalidUTF8FailsInsideAFrameStillArriving() {
        // Autobahn 6.4.3/6.4.4: one frame sent in chops; fail on the chop with the bad byte.
        let frame = clientFrame(.text, Array("κόσμε".utf8) + [0xED, 0xA0, 0x80] + Array("edited".utf8))
        let header = 6 // 2 bytes + 4-byte key
        let badIndex = header + Array("κόσμε".utf8).count + 1 // 0xA0 after 0xED
        var connection = WebSocketConnection(role: .server)
        XCTAssertEqual(connection.receive(Array(frame[..<badIndex])), [])
        let events = connection.receive([frame[badIndex]])
        XCTAssertTrue(failure(.invalidUTF8, in: events), "\(events)")
        XCTAssertEqual(closeCode(in: events.first?.sentBytes ?? [], sentBy: .server), 1007)

        // The same frame one byte at a time fails at exactly that byte.
        var byteWise = WebSocketConnection(role: .server)
        for (index, byte) in frame.enumerated() {
            let events = byteWise.receive([byte])
            if index < badIndex {
                XCTAssertEqual(events, [], "byte \(index)")
            } else {
                XCTAssertTrue(failure(.invalidUTF8, in: events), "byte \(index)")
                break
            }
        }
    }

    func testReplyToAMessagePrecedesTheCloseCausedByLaterBytes() {
        // Autobahn 3.2 and 4.1.3: a message, then a bad frame, in one read. Pulling events one
        // at a time lets the echo go out before our Close.
        var server = WebSocketConnection(role: .server)
        server.append(clientFrame(.text, Array("echo me".utf8)) + [0xA1, 0x80, 1, 2, 3, 4] + clientFrame(.ping, []))
        XCTAssertEqual(server.nextEvent(), .text("echo me"))
        XCTAssertEqual(server.state, .open)
        XCTAssertEqual(server.sendText("echo me"), serverFrame(.text, Array("echo me".utf8)))
        XCTAssertEqual(server.nextEvent()?.sentBytes, serverClose(1002, "reserved bits 10 set without an extension"))
        XCTAssertEqual(server.nextEvent()?.failure?.code, .reservedBitsSet)
        XCTAssertNil(server.nextEvent())
        XCTAssertEqual(server.state, .closed)
    }

    func testTextEndingInsideASequenceFails() {
        var connection = WebSocketConnection(role: .server)
        let events = connection.receive(clientFrame(.text, [0x41, 0xCE]))
        XCTAssertTrue(failure(.invalidUTF8, in: events))
    }

    func testProtocolErrorsSendCloseWithTheirCode() {
        let cases: [([UInt8], WebSocketError.Code, UInt16)] = [
            (serverFrame(.text, [0x41]), .unmaskedFrame, 1002),
            ([0x89, 0xFE], .controlFrameTooLong, 1002),
            ([0x09, 0x80, 1, 2, 3, 4], .fragmentedControlFrame, 1002),
            ([0xC1, 0x80, 1, 2, 3, 4], .reservedBitsSet, 1002),
            ([0x83, 0x80, 1, 2, 3, 4], .reservedOpcode, 1002),
            ([0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 0], .invalidLength, 1002),
            (clientFrame(.continuation, [1]), .unexpectedContinuation, 1002),
            ([0x82, 0xFF, 0, 0, 0, 0, 0x40, 0, 0, 0], .messageTooBig, 1009),
        ]
        for (bytes, code, closeValue) in cases {
            var connection = WebSocketConnection(role: .server)
            let events = connection.receive(bytes)
            XCTAssertEqual(events.count, 2, "\(code)")
            XCTAssertEqual(closeCode(in: events.first?.sentBytes ?? [], sentBy: .server), closeValue, "\(code)")
            XCTAssertTrue(failure(code, in: events), "\(code): \(events)")
            XCTAssertEqual(connection.state, .closed)
        }
        // A client refuses masked frames.
        var client = WebSocketConnection(role: .client, maskingKeySource: { 0x0102_0304 })
        let events = client.receive(clientFrame(.text, [0x41]))
        XCTAssertEqual(closeCode(in: events.first?.sentBytes ?? [], sentBy: .client), 1002)
        XCTAssertTrue(failure(.maskedFrame, in: events))
    }

    func testMessageTooBigAcrossFragmentsAndTooManyFragments() {
        let configuration = WebSocketConfiguration(maxMessageSize: 10, maxFragments: 2)
        var connection = WebSocketConnection(role: .server, configuration: configuration)
        var events = connection.receive(clientFrame(.binary, Array(repeating: 1, count: 6), fin: false))
        XCTAssertEqual(events, [])
        events = connection.receive(Array(clientFrame(.continuation, Array(repeating: 2, count: 5)).prefix(2)))
        XCTAssertTrue(failure(.messageTooBig, in: events))
        XCTAssertEqual(closeCode(in: events.first?.sentBytes ?? [], sentBy: .server), 1009)

        var fragments = WebSocketConnection(role: .server, configuration: configuration)
        events = feed(
            &fragments,
            [
                clientFrame(.text, [0x61], fin: false), clientFrame(.continuation, [0x61], fin: false),
                clientFrame(.continuation, [0x61]),
            ])
        XCTAssertTrue(failure(.tooManyFragments, in: events))
        XCTAssertEqual(closeCode(in: events.first?.sentBytes ?? [], sentBy: .server), 1009)
    }

    func testPeerCloseIsEchoed() {
        assertServerEvents(
            [clientFrame(.close, closePayload(1000, "bye")), clientFrame(.text, [0x41])],
            [.send(serverClose(1000)), .closed(code: .normal, reason: "bye")])
        // No code: answered with 1000, reported as nil.
        assertServerEvents([clientFrame(.close, [])], [.send(serverClose(1000)), .closed(code: nil, reason: "")])
        for code: UInt16 in [1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 3000, 3999, 4000, 4999] {
            assertServerEvents(
                [clientFrame(.close, closePayload(code))],
                [.send(serverClose(code)), .closed(code: CloseCode(code), reason: "")])
        }
        // Reason of the maximum 123 bytes.
        let reason = String(repeating: "r", count: 123)
        assertServerEvents(
            [clientFrame(.close, closePayload(1000, reason))],
            [.send(serverClose(1000)), .closed(code: .normal, reason: reason)])
    }

    func testInvalidClosePayloads() {
        for code: UInt16 in [0, 999, 1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999, 5000, 65535] {
            var connection = WebSocketConnection(role: .server)
            let events = connection.receive(clientFrame(.close, closePayload(code)))
            XCTAssertTrue(failure(.invalidCloseCode, in: events), "\(code)")
            XCTAssertEqual(closeCode(in: events.first?.sentBytes ?? [], sentBy: .server), 1002, "\(code)")
        }
        var oneByte = WebSocketConnection(role: .server)
        var events = oneByte.receive(clientFrame(.close, [0x03]))
        XCTAssertTrue(failure(.invalidClosePayload, in: events))
        XCTAssertEqual(closeCode(in: events.first?.sentBytes ?? [], sentBy: .server), 1002)

        var badReason = WebSocketConnection(role: .server)
        events = badReason.receive(clientFrame(.close, closePayload(1000) + [0xCE, 0xBA, 0xE1, 0xBD, 0xB9, 0xED, 0xA0, 0x80]))
        XCTAssertTrue(failure(.invalidUTF8, in: events))
        XCTAssertEqual(closeCode(in: events.first?.sentBytes ?? [], sentBy: .server), 1007)

        // 126 bytes of close payload is an over-long control frame.
        var tooLong = WebSocketConnection(role: .server)
        events = tooLong.receive(clientFrame(.close, closePayload(1000, String(repeating: "r", count: 124))))
        XCTAssertTrue(failure(.controlFrameTooLong, in: events))
    }

    func testClosingHandshakeWeStart() {
        var server = WebSocketConnection(role: .server)
        XCTAssertEqual(server.close(code: .goingAway, reason: "shutdown"), serverClose(1001, "shutdown"))
        XCTAssertEqual(server.state, .closing)
        XCTAssertEqual(server.close(code: .normal, reason: ""), [])
        XCTAssertEqual(server.sendText("late"), [])
        XCTAssertEqual(server.ping([1]), [])
        // Messages still arrive while closing; pings are not answered any more.
        XCTAssertEqual(
            server.receive(clientFrame(.text, Array("in flight".utf8)) + clientFrame(.ping, [1])),
            [.text("in flight"), .ping([1])])
        XCTAssertEqual(server.receive(clientFrame(.close, closePayload(1001))), [.closed(code: .goingAway, reason: "")])
        XCTAssertEqual(server.state, .closed)
        // A protocol error while closing sends no second Close.
        var other = WebSocketConnection(role: .server)
        _ = other.close()
        let events = other.receive([0x83, 0x80, 1, 2, 3, 4])
        XCTAssertEqual(events.count, 1)
        XCTAssertTrue(failure(.reservedOpcode, in: events))
    }

    func testCloseInTheMiddleOfAFragmentedMessageDropsIt() {
        // Autobahn 7.1.5.
        assertServerEvents(
            [
                clientFrame(.text, Array("frag".utf8), fin: false), clientFrame(.close, closePayload(1000)),
                clientFrame(.continuation, Array("ment".utf8)),
            ],
            [.send(serverClose(1000)), .closed(code: .normal, reason: "")])
    }

    func testLongCloseReasonIsTruncatedAtACharacterBoundary() {
        var server = WebSocketConnection(role: .server)
        let bytes = server.close(code: .normal, reason: String(repeating: "é", count: 100))
        let frame = parseFrames([bytes], role: .client).frames.first
        XCTAssertEqual(frame?.payload.count, 2 + 122)
        XCTAssertNotNil(String(validating: frame?.payload.dropFirst(2) ?? [], as: UTF8.self))
    }

    func testClientAndServerTalkThroughEachOther() {
        let nextKey: @Sendable () -> UInt32 = { 0xA1B2_C3D4 }
        var client = WebSocketConnection(role: .client, maskingKeySource: nextKey)
        var server = WebSocketConnection(role: .server)
        let hello = client.sendText("{\"operation\":0,\"orders\":[]}")
        XCTAssertEqual(hello[1] & 0x80, 0x80, "client frames are masked")
        XCTAssertEqual(server.receive(hello), [.text("{\"operation\":0,\"orders\":[]}")])
        let big = (0..<70_000).map { UInt8(truncatingIfNeeded: $0) }
        let reply = server.sendBinary(big)
        XCTAssertEqual(reply[1] & 0x80, 0, "server frames are not masked")
        XCTAssertEqual(client.receive(reply), [.binary(big)])

        let ping = client.ping([1, 2])
        let serverEvents = server.receive(ping)
        XCTAssertEqual(serverEvents.last, .ping([1, 2]))
        XCTAssertEqual(client.receive(serverEvents.first?.sentBytes ?? []), [.pong([1, 2])])

        let closing = client.close(code: .normal, reason: "done")
        let answer = server.receive(closing)
        XCTAssertEqual(answer.last, .closed(code: .normal, reason: "done"))
        XCTAssertEqual(server.state, .closed)
        XCTAssertEqual(client.receive(answer.first?.sentBytes ?? []), [.closed(code: .normal, reason: "")])
        XCTAssertEqual(client.state, .closed)
    }

    func testLargeMessageInManySmallReads() {
        let configuration = WebSocketConfiguration(maxMessageSize: 4 << 20, maxFragments: 1 << 16)
        var client = WebSocketConnection(role: .client, maskingKeySource: { 0xDEAD_BEEF })
        var server = WebSocketConnection(role: .server, configuration: configuration)
        let text = String(repeating: "orders-κόσμε-", count: 20_000)
        let bytes = client.sendText(text)
        var events: [WebSocketEvent] = []
        var index = 0
        while index < bytes.count {
            events += server.receive(Array(bytes[index..<min(bytes.count, index + 1000)]))
            index += 1000
        }
        XCTAssertEqual(events, [.text(text)])
    }
}
