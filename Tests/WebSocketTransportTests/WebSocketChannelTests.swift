import EventLoopIO
import WebSocket
import WebSocketTransport
import XCTest

/// The transport over real loopback sockets, with deadlines of a few hundred milliseconds; each
/// test runs the loop until the events it waits for have happened.
final class WebSocketChannelTests: XCTestCase {
    func testOpensWithSubprotocolExchangesTextAndClosesBothWays() throws {
        let loop = try EventLoop()
        var endings = 0
        let server = try TestServer(loop: loop, configuration: quickConfiguration()) { request in
            XCTAssertEqual(request.path, "/sync")
            return .accept(subprotocol: request.selectSubprotocol(from: ["chat"]))
        }
        server.onEvent = { event, channel in
            switch event {
            case .text(let text): channel.sendEncoded(WebSocketChannel.serverTextFrame("echo " + text))
            case .ended: endings += 1; if endings == 2 { loop.stop() }
            default: break
            }
        }
        // A name, not an address: the lookup runs off the loop.
        let client = WebSocketChannel.connect(
            host: "localhost", port: server.port, path: "/sync",
            subprotocols: ["other", "chat"], loop: loop, configuration: quickConfiguration())
        var clientEvents: [String] = []
        var clientEnding: WebSocketChannel.Ending?
        client.onEvent = { [unowned client] event in
            switch event {
            case .opened(let opening):
                clientEvents.append("opened \(opening.subprotocol ?? "-")")
                client.sendText("hello")
            case .text(let text):
                clientEvents.append(text)
                client.close(code: .goingAway, reason: "done")
            case .ended(let ending):
                clientEnding = ending
                endings += 1
                if endings == 2 { loop.stop() }
            case .binary, .protocolError:
                XCTFail("unexpected \(event)")
            }
        }
        runLoop(loop)
        server.close()
        XCTAssertEqual(clientEvents, ["opened chat", "echo hello"])
        // RFC 6455 5.5.1: the answering endpoint "typically echos the status code it received".
        XCTAssertEqual(clientEnding?.cause, .closed(code: .goingAway, reason: ""))
        XCTAssertEqual(server.ending?.cause, .closed(code: .goingAway, reason: "done"))
        guard case .opened(let opening) = server.events.first else { return XCTFail("server did not open") }
        XCTAssertEqual(opening.subprotocol, "chat")
        XCTAssertEqual(opening.request?.requestedSubprotocols, ["other", "chat"])
    }

    func testHandshakeDeadlineDropsATricklingClient() throws {
        let loop = try EventLoop()
        let server = try TestServer(loop: loop, configuration: quickConfiguration())
        let raw = try RawClient(loop: loop, port: server.port)
        raw.channel.write(Array(raw.request.prefix(20)))
        stopWhenBothEnded(loop, server, raw)
        let started = loop.now
        runLoop(loop)
        server.close()
        XCTAssertEqual(server.ending?.cause, .handshakeTimedOut(.milliseconds(200)))
        XCTAssertGreaterThanOrEqual(loop.now - started, .milliseconds(200))
        XCTAssertEqual(raw.received, [], "nothing may be sent to a client that never finished its request")
    }

    func testOwnerRejectionIsWrittenThenTheConnectionClosed() throws {
        let loop = try EventLoop()
        let server = try TestServer(loop: loop, configuration: quickConfiguration()) { _ in
            .reject(HTTPRejection(status: 403, body: "not here"))
        }
        var clientEnding: WebSocketChannel.Ending?
        let client = WebSocketChannel.connect(
            host: "127.0.0.1", port: server.port, loop: loop,
            configuration: quickConfiguration())
        server.afterEachEvent = { if server.ending != nil && clientEnding != nil { loop.stop() } }
        client.onEvent = { event in
            if case .ended(let ending) = event { clientEnding = ending }
            server.afterEachEvent()
        }
        runLoop(loop)
        server.close()
        guard case .handshakeFailed = clientEnding?.cause else { return XCTFail("client ended with \(String(describing: clientEnding))") }
        guard case .rejected(let rejection) = server.ending?.cause else {
            return XCTFail("server ended with \(String(describing: server.ending))")
        }
        XCTAssertEqual(rejection.status, 403)
    }

    func testInvalidRequestGetsTheParsersErrorWithoutAskingTheOwner() throws {
        let loop = try EventLoop()
        let server = try TestServer(loop: loop, configuration: quickConfiguration()) { _ in
            XCTFail("the owner is asked only about valid requests")
            return .accept(subprotocol: nil)
        }
        let raw = try RawClient(loop: loop, port: server.port)
        raw.channel.write(Array("POST / HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        stopWhenBothEnded(loop, server, raw)
        runLoop(loop)
        server.close()
        XCTAssertTrue(raw.responseStarts(with: "HTTP/1.1 405"), String(decoding: raw.received, as: UTF8.self))
        XCTAssertEqual(raw.closeReason, .endOfFile)
    }

    func testFramesPipelinedBehindTheRequestAreDeliveredAfterOpening() throws {
        let loop = try EventLoop()
        let server = try TestServer(loop: loop, configuration: quickConfiguration())
        server.onEvent = { event, _ in if case .text("second") = event { loop.stop() } }
        let raw = try RawClient(loop: loop, port: server.port)
        raw.channel.write(raw.request + RawClient.frame(.text, Array("first".utf8)) + RawClient.frame(.text, Array("second".utf8)))
        runLoop(loop)
        server.close()
        let names = server.events.map { event -> String in
            switch event {
            case .opened: return "opened"
            case .text(let text): return text
            default: return "\(event)"
            }
        }
        XCTAssertEqual(names, ["opened", "first", "second"])
    }

    func testAFrameThatStallsIsFailedWith1008() throws {
        let loop = try EventLoop()
        let server = try TestServer(loop: loop, configuration: quickConfiguration())
        let raw = try RawClient(loop: loop, port: server.port)
        let frame = RawClient.frame(.text, Array("never finished".utf8))
        raw.channel.write(raw.request + Array(frame.prefix(4)))
        stopWhenBothEnded(loop, server, raw)
        runLoop(loop)
        server.close()
        XCTAssertEqual(server.ending?.cause, .frameTimedOut(.milliseconds(200)))
        XCTAssertEqual(server.ending?.closeCode, .policyViolation)
        guard case .send(let answer)? = raw.frameEvents.first else { return XCTFail("no Close received: \(raw.frameEvents)") }
        XCTAssertEqual(Array(answer.prefix(1)), [0x88], "a Close frame")
        XCTAssertTrue(
            raw.frameEvents.contains(.closed(code: .policyViolation, reason: "frame not completed within 200 ms")),
            "\(raw.frameEvents)")
    }

    func testAnIdlePeerIsPingedAndOneThatAnswersStaysAlive() throws {
        let loop = try EventLoop()
        var configuration = quickConfiguration()
        configuration.heartbeat = .init(idleInterval: .milliseconds(40), silenceLimit: .milliseconds(150))
        var idleCalls = 0
        let server = try TestServer(loop: loop, configuration: configuration)
        server.onEvent = { event, channel in
            guard case .opened = event else { return }
            channel.onIdle = {
                idleCalls += 1
                // Five pings answered: far past the silence limit, alive only thanks to pongs.
                if idleCalls == 5 { channel.close() }
                return .ping
            }
        }
        // The transport answers pings by itself; this client has no heartbeat of its own.
        let client = WebSocketChannel.connect(
            host: "127.0.0.1", port: server.port, loop: loop,
            configuration: quickConfiguration())
        var clientEnded = false
        server.afterEachEvent = { if server.ending != nil && clientEnded { loop.stop() } }
        client.onEvent = { event in
            if case .ended = event { clientEnded = true }
            server.afterEachEvent()
        }
        runLoop(loop)
        server.close()
        XCTAssertEqual(idleCalls, 5)
        XCTAssertEqual(server.ending?.cause, .closed(code: .normal, reason: ""))
    }

    func testASilentPeerIsPingedThenDeclaredDead() throws {
        let loop = try EventLoop()
        var configuration = quickConfiguration()
        configuration.heartbeat = .init(idleInterval: .milliseconds(40), silenceLimit: .milliseconds(150))
        let server = try TestServer(loop: loop, configuration: configuration)
        let raw = try RawClient(loop: loop, port: server.port)
        raw.channel.write(raw.request)
        stopWhenBothEnded(loop, server, raw)
        let started = loop.now
        runLoop(loop)
        server.close()
        guard case .peerSilent(let silence) = server.ending?.cause else {
            return XCTFail("ended with \(String(describing: server.ending))")
        }
        XCTAssertGreaterThanOrEqual(silence, .milliseconds(150))
        XCTAssertLessThan(loop.now - started, .milliseconds(1000))
        let pings = raw.frameEvents.filter { if case .ping = $0 { return true } else { return false } }
        XCTAssertGreaterThanOrEqual(pings.count, 2, "pinged at 40 ms, then every 20 ms: \(raw.frameEvents)")
    }

    func testAPeerWhoseSilenceIsToleratedIsKeptAndStillPinged() throws {
        let loop = try EventLoop()
        var configuration = quickConfiguration()
        configuration.heartbeat = .init(idleInterval: .milliseconds(40), silenceLimit: .milliseconds(100))
        let server = try TestServer(loop: loop, configuration: configuration)
        var reported: [Duration] = []
        server.onEvent = { event, channel in
            guard case .opened = event else { return }
            channel.toleratesSilence = true
            channel.onSilenceTolerated = { silence in
                reported.append(silence)
                // Kept well past the limit: the owner ends it after three times the limit.
                _ = loop.schedule(after: .milliseconds(200)) { channel.close(code: .normal, reason: "done") }
            }
        }
        let raw = try RawClient(loop: loop, port: server.port)
        raw.channel.write(raw.request)
        stopWhenBothEnded(loop, server, raw)
        runLoop(loop)
        server.close()
        XCTAssertEqual(reported.count, 1, "reported once per silent spell: \(reported)")
        XCTAssertGreaterThanOrEqual(reported.first ?? .zero, .milliseconds(100))
        switch server.ending?.cause {
        case .closeTimedOut(.normal, _)?, .closed?: break
        default: XCTFail("ended with \(String(describing: server.ending)), not by its owner after the silence")
        }
        let pings = raw.frameEvents.filter { if case .ping = $0 { return true } else { return false } }
        XCTAssertGreaterThanOrEqual(pings.count, 5, "still pinged every 20 ms past the limit: \(raw.frameEvents)")
    }

    func testAnOwnersHeartbeatReplacesThePing() throws {
        let loop = try EventLoop()
        var configuration = quickConfiguration()
        configuration.heartbeat = .init(idleInterval: .milliseconds(40), silenceLimit: .milliseconds(150))
        let server = try TestServer(loop: loop, configuration: configuration)
        server.onEvent = { event, channel in
            guard case .opened = event else { return }
            channel.onIdle = {
                channel.sendText("heartbeat")
                return .sentHeartbeat
            }
        }
        let raw = try RawClient(loop: loop, port: server.port)
        raw.channel.write(raw.request)
        raw.onChange = { if raw.frameEvents.contains(.text("heartbeat")) { loop.stop() } }
        runLoop(loop)
        server.close()
        XCTAssertFalse(raw.frameEvents.contains { if case .ping = $0 { return true } else { return false } })
    }

    func testAnUnansweredCloseDropsTheConnectionAfterTheTimeout() throws {
        let loop = try EventLoop()
        let server = try TestServer(loop: loop, configuration: quickConfiguration())
        server.onEvent = { event, channel in
            if case .opened = event { channel.close(code: .goingAway, reason: "bye") }
        }
        let raw = try RawClient(loop: loop, port: server.port)
        raw.channel.write(raw.request)
        stopWhenBothEnded(loop, server, raw)
        let started = loop.now
        runLoop(loop)
        server.close()
        XCTAssertEqual(server.ending?.cause, .closeTimedOut(.goingAway, reason: "bye"))
        XCTAssertGreaterThanOrEqual(loop.now - started, .milliseconds(200))
        XCTAssertTrue(raw.frameEvents.contains(.closed(code: .goingAway, reason: "bye")), "\(raw.frameEvents)")
    }

    func testAPeerThatDoesNotReadIsDroppedPastTheSendCap() throws {
        let loop = try EventLoop()
        var configuration = quickConfiguration()
        configuration.maxPendingSendBytes = 256 << 10
        let server = try TestServer(loop: loop, configuration: configuration)
        let message = String(repeating: "x", count: 64 << 10)
        var sent = 0
        server.onEvent = { event, channel in
            switch event {
            case .opened:
                // 32 MiB: the kernel's buffers take some megabytes first, then the cap trips.
                for _ in 0..<512 {
                    channel.sendText(message)
                    sent += 1
                }
            case .ended:
                loop.stop()
            default:
                break
            }
        }
        // A socket outside the loop that sends its request and never reads: its window fills.
        let socket = try TCPSocket.connect(host: "127.0.0.1", port: server.port)
        let request = ClientHandshake(host: "127.0.0.1", key: ClientHandshake.makeKey()).requestBytes
        let sentBytes = try request.withUnsafeBytes { try socket.send($0) }
        guard case .value(request.count) = sentBytes else { return XCTFail("a loopback connect completes at once") }
        runLoop(loop)
        server.close()
        socket.close()
        XCTAssertEqual(server.ending?.cause, .dropped(.sendBufferOverflow))
        XCTAssertEqual(sent, 512)
    }

    func testBinaryClosesWith1003WhenTextOnlyAndIsDeliveredOtherwise() throws {
        for acceptsBinary in [false, true] {
            let loop = try EventLoop()
            var configuration = quickConfiguration()
            configuration.acceptsBinary = acceptsBinary
            let server = try TestServer(loop: loop, configuration: configuration)
            server.onEvent = { event, channel in
                if case .binary(let bytes) = event { channel.sendBinary(bytes) }
            }
            let raw = try RawClient(loop: loop, port: server.port)
            raw.channel.write(raw.request + RawClient.frame(.binary, [0, 255]))
            raw.onChange = { if !raw.frameEvents.isEmpty { loop.stop() } }
            runLoop(loop)
            server.close()
            if acceptsBinary {
                XCTAssertEqual(raw.frameEvents, [.binary([0, 255])])
            } else {
                XCTAssertEqual(raw.frameEvents.last, .closed(code: .unsupportedData, reason: "only text messages are accepted"))
                XCTAssertEqual(server.phase(0), .closing)
            }
        }
    }

    /// A server channel that starts with a handshake-sized limit (as the master does before a
    /// terminal authenticates).
    private func limitedConfiguration() -> WebSocketChannelConfiguration {
        var configuration = quickConfiguration()
        configuration.acceptsBinary = true
        configuration.limits.maxMessageSize = 1024
        configuration.limits.maxFrameSize = 1024
        return configuration
    }

    func testAHeaderOverTheLimitClosesWith1009BeforeItsPayload() throws {
        let loop = try EventLoop()
        let server = try TestServer(loop: loop, configuration: limitedConfiguration())
        let raw = try RawClient(loop: loop, port: server.port)
        // The header of a 1 MiB binary frame (64-bit length, masked) and no payload at all.
        let header: [UInt8] = [0x82, 0xFF, 0, 0, 0, 0, 0, 0x10, 0, 0, 0x12, 0x34, 0x56, 0x78]
        raw.channel.write(raw.request + header)
        stopWhenBothEnded(loop, server, raw)
        runLoop(loop)
        server.close()
        XCTAssertEqual(server.ending?.closeCode, .messageTooBig)
        XCTAssertTrue(
            raw.frameEvents.contains { if case .closed(code: .messageTooBig?, reason: _) = $0 { return true } else { return false } },
            "\(raw.frameEvents)")
    }

    func testTheLimitRaisedDuringAMessageAppliesToTheNextFrame() throws {
        let loop = try EventLoop()
        let server = try TestServer(loop: loop, configuration: limitedConfiguration())
        server.onEvent = { event, channel in
            guard case .binary(let bytes) = event else { return }
            // The handshake-sized first message authenticates the peer: the node's size from now.
            if bytes.count == 96 {
                XCTAssertEqual(channel.messageLimit, 1024)
                channel.setMessageLimit(1 << 20)
            } else {
                channel.sendBinary(Array("\(bytes.count)".utf8))
            }
        }
        let raw = try RawClient(loop: loop, port: server.port)
        raw.onChange = { if !raw.frameEvents.isEmpty { loop.stop() } }
        // Both messages in one write, pipelined behind the request.
        raw.channel.write(
            raw.request + RawClient.frame(.binary, [UInt8](repeating: 1, count: 96))
                + RawClient.frame(.binary, [UInt8](repeating: 2, count: 100_000)))
        runLoop(loop)
        server.close()
        XCTAssertEqual(raw.frameEvents, [.binary(Array("100000".utf8))])
        XCTAssertEqual(server.channels.first?.messageLimit, 1 << 20)
    }

    func testARefusedConnectEndsTheClient() throws {
        let loop = try EventLoop()
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0)
        let port = listener.localPort
        listener.close()
        var ending: WebSocketChannel.Ending?
        let client = WebSocketChannel.connect(host: "127.0.0.1", port: port, loop: loop, configuration: quickConfiguration())
        client.onEvent = { event in
            if case .ended(let e) = event { ending = e; loop.stop() }
        }
        runLoop(loop)
        guard case .dropped(.error(let error)) = ending?.cause else { return XCTFail("ended with \(String(describing: ending))") }
        XCTAssertEqual(error.errno, ECONNREFUSED)
    }

    func testAbortWhileResolvingEndsOnTheNextTurn() throws {
        let loop = try EventLoop()
        var ending: WebSocketChannel.Ending?
        let client = WebSocketChannel.connect(host: "localhost", port: 9, loop: loop, configuration: quickConfiguration())
        client.onEvent = { event in
            if case .ended(let e) = event { ending = e; loop.stop() }
        }
        XCTAssertEqual(client.phase, .resolving)
        client.abort(reason: "changed my mind")
        XCTAssertNil(ending, "never reported from inside the owner's call")
        runLoop(loop)
        XCTAssertEqual(ending?.cause, .aborted("changed my mind"))
    }
}
