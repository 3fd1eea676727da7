import EventLoopIO
import WebSocket
import WebSocketTransport
import XCTest

/// Runs `loop` until something stops it, failing the test if that takes longer than `seconds`.
func runLoop(_ loop: EventLoop, timeoutSeconds: Int64 = 10, file: StaticString = #filePath, line: UInt = #line) {
    var timedOut = false
    let watchdog = loop.schedule(after: .seconds(timeoutSeconds)) {
        timedOut = true
        loop.stop()
    }
    loop.run()
    loop.cancel(watchdog)
    XCTAssertFalse(timedOut, "event loop did not finish within \(timeoutSeconds) s", file: file, line: line)
}

/// A listener on 127.0.0.1 whose connections are served by `WebSocketChannel.accept`.
final class TestServer {
    let port: UInt16
    private let acceptor: Acceptor
    /// Every connection accepted so far, in order.
    private(set) var channels: [WebSocketChannel] = []
    /// Every event of every connection, in order.
    private(set) var events: [WebSocketChannel.Event] = []
    /// Called after each event is recorded, with its connection.
    var onEvent: (WebSocketChannel.Event, WebSocketChannel) -> Void = { _, _ in }
    /// Called after each event, after `onEvent`.
    var afterEachEvent: () -> Void = {}

    init(
        loop: EventLoop, configuration: WebSocketChannelConfiguration,
        decide: @escaping (HandshakeRequest) -> WebSocketChannel.HandshakeDecision = { _ in .accept(subprotocol: nil) }
    ) throws {
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0)
        port = listener.localPort
        acceptor = try Acceptor(listener: listener, loop: loop) { _ in }
        acceptor.onAccept = { [unowned self] accepted in
            do {
                let channel = try WebSocketChannel.accept(
                    accepted.socket, loop: loop, configuration: configuration,
                    decide: decide)
                channels.append(channel)
                channel.onEvent = { [unowned self, unowned channel] event in
                    events.append(event)
                    onEvent(event, channel)
                    afterEachEvent()
                }
            } catch {
                XCTFail("accept failed: \(error)")
            }
        }
    }

    /// How the first connection ended, if it did.
    var ending: WebSocketChannel.Ending? {
        for case .ended(let ending) in events { return ending }
        return nil
    }

    func close() {
        acceptor.close()
    }
}

/// A client written byte by byte: it sends what the test says and records what comes back, so
/// a test can misbehave in ways `WebSocketChannel` never would (stall, never answer, not read).
final class RawClient {
    let channel: StreamChannel
    let key = ClientHandshake.makeKey()
    /// Every byte received.
    private(set) var received: [UInt8] = []
    /// Set once the connection closed.
    private(set) var closeReason: StreamChannel.CloseReason?
    /// Called after each read and after the close.
    var onChange: () -> Void = {}

    init(loop: EventLoop, port: UInt16) throws {
        let socket = try TCPSocket.connect(host: "127.0.0.1", port: port)
        channel = try StreamChannel.connecting(socket, loop: loop) { _ in }
        channel.onRead = { [unowned self] bytes in
            received += bytes
            onChange()
        }
        channel.onClose = { [unowned self] reason in
            closeReason = reason
            onChange()
        }
    }

    /// A valid opening request.
    var request: [UInt8] {
        ClientHandshake(host: "127.0.0.1", path: "/", key: key).requestBytes
    }

    /// Whether the server's answer starts with this status line prefix.
    func responseStarts(with prefix: String) -> Bool {
        received.starts(with: Array(prefix.utf8))
    }

    /// The frames after the `101` response head, as a client sees them.
    var frameEvents: [WebSocketEvent] {
        guard let end = received.firstRange(of: Array("\r\n\r\n".utf8))?.upperBound else { return [] }
        var connection = WebSocketConnection(role: .client)
        return connection.receive(Array(received[end...]))
    }

    /// A masked client frame.
    static func frame(_ opcode: Opcode, _ payload: [UInt8], fin: Bool = true) -> [UInt8] {
        FrameEncoder.encode(Frame(fin: fin, opcode: opcode, payload: payload), maskingKey: MaskingKey(0x1234_5678))
    }
}

/// Short deadlines, so that each test runs in well under a second.
func quickConfiguration() -> WebSocketChannelConfiguration {
    WebSocketChannelConfiguration(
        handshakeDeadline: .milliseconds(200), frameDeadline: .milliseconds(200),
        heartbeat: nil, closeTimeout: .milliseconds(200), clientCloseWait: .milliseconds(200))
}

extension TestServer {
    /// The phase of the `index`th connection.
    func phase(_ index: Int) -> WebSocketChannel.Phase? {
        index < channels.count ? channels[index].phase : nil
    }
}

/// Stops `loop` once the server's first connection and the raw client have both ended.
func stopWhenBothEnded(_ loop: EventLoop, _ server: TestServer, _ raw: RawClient) {
    let check = { if server.ending != nil && raw.closeReason != nil { loop.stop() } }
    server.afterEachEvent = check
    raw.onChange = check
}
