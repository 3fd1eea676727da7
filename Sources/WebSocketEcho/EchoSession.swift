import Posix
import WebSocket

/// One WebSocket connection of the echo tool, either side: a `StreamChannel` that first carries
/// the opening handshake and then the frames of a `WebSocketConnection`, all on one event loop.
///
/// The session is kept alive by its channel's callbacks, which the channel drops once it has
/// closed; `onFinish` reports how it ended, exactly once.
final class EchoSession {
    /// How a session ended.
    enum Outcome: Equatable {
        /// The closing handshake completed; `code` is the peer's close code.
        case closed(code: CloseCode?, reason: String)
        /// The peer violated the protocol or a limit; our Close frame was sent.
        case failed(WebSocketError)
        /// (Server) the opening handshake was refused with this HTTP error.
        case rejected(HTTPRejection)
        /// (Client) the server refused or botched the opening handshake.
        case handshakeFailed(WebSocketError)
        /// The opening handshake did not finish within the deadline.
        case handshakeTimedOut
        /// The TCP connection ended before the closing handshake did.
        case dropped(StreamChannel.CloseReason)
    }

    private enum Phase {
        case handshaking
        case open
        case ending
    }

    private enum Handshake {
        case server(ServerHandshakeParser)
        case client(ClientHandshake)
    }

    /// How long the opening handshake may take, from the TCP connection on; a client that
    /// trickles its request (slowloris) is dropped after this.
    static let handshakeTimeoutMilliseconds: Int64 = 5_000
    /// How long a client waits for the server to close TCP after the closing handshake.
    /// RFC 6455 7.1.1: "the client SHOULD wait for the server to close the connection but MAY
    /// close the connection at any time after sending and receiving a Close message, e.g., if
    /// it has not received a TCP Close from the server in a reasonable time period."
    static let clientCloseWaitMilliseconds: Int64 = 2_000

    let channel: StreamChannel
    /// Whether received text and binary messages are sent back with the same type.
    let echoes: Bool
    /// Called with each text message received (after it was echoed, when echoing).
    var onText: ((String) -> Void)?
    /// Called once the opening handshake succeeded.
    var onOpen: (() -> Void)?
    /// Called once, after the TCP connection closed.
    var onFinish: ((Outcome) -> Void)?

    private var handshake: Handshake
    private var connection: WebSocketConnection
    private var phase = Phase.handshaking
    private var handshakeBytes: [UInt8] = []
    private var outcome: Outcome?
    private var timer: TimerHandle?

    private init(channel: StreamChannel, handshake: Handshake, role: WebSocketRole,
                 configuration: WebSocketConfiguration, echoes: Bool) {
        self.channel = channel
        self.handshake = handshake
        self.connection = WebSocketConnection(role: role, configuration: configuration)
        self.echoes = echoes
        channel.onRead = { [self] bytes in received(bytes) }
        channel.onClose = { [self] reason in channelClosed(reason) }
        timer = channel.loop.schedule(after: Self.handshakeTimeoutMilliseconds) { [self] in
            timer = nil
            guard phase == .handshaking else { return }
            outcome = .handshakeTimedOut
            channel.close()
        }
    }

    /// Serves the opening handshake on an accepted channel, then echoes every message.
    static func serve(_ channel: StreamChannel, configuration: WebSocketConfiguration) -> EchoSession {
        EchoSession(channel: channel, handshake: .server(ServerHandshakeParser(configuration: configuration)),
                    role: .server, configuration: configuration, echoes: true)
    }

    /// Sends the opening handshake for `path` on a channel that is connecting (or connected)
    /// to `host`, then handles frames, echoing messages when `echoes` is set.
    static func connect(_ channel: StreamChannel, host: String, path: String,
                        configuration: WebSocketConfiguration, echoes: Bool) -> EchoSession {
        let handshake = ClientHandshake(host: host, path: path, key: ClientHandshake.makeKey(),
                                        configuration: configuration)
        let session = EchoSession(channel: channel, handshake: .client(handshake), role: .client,
                                  configuration: configuration, echoes: echoes)
        // Writes made while the connect is in progress are buffered by the channel.
        channel.write(handshake.requestBytes)
        return session
    }

    /// Starts the closing handshake (RFC 6455 7.1.2).
    func close(code: CloseCode = .normal) {
        guard phase == .open else { return }
        channel.write(connection.close(code: code, reason: ""))
    }

    // MARK: - Reading

    private func received(_ bytes: [UInt8]) {
        switch phase {
        case .handshaking:
            handshakeBytes.append(contentsOf: bytes)
            continueHandshake()
        case .open:
            connection.append(bytes)
            drainEvents()
        case .ending:
            // RFC 6455 1.4: after the closing handshake nothing more is meaningful.
            return
        }
    }

    private func continueHandshake() {
        switch handshake {
        case .server(var parser):
            let result = parser.parse(handshakeBytes)
            handshake = .server(parser)
            switch result {
            case .incomplete:
                return
            case .rejected(let rejection):
                // The error response is the only thing written: no 101 precedes it.
                outcome = .rejected(rejection)
                phase = .ending
                channel.write(rejection.bytes)
                channel.closeAfterFlush()
            case .accepted(let request, let consumed):
                // RFC 6455 4.2.2: no Sec-WebSocket-Extensions is sent, so an offered
                // permessage-deflate is declined and frames with RSV1 set stay a protocol error.
                channel.write(ServerHandshake.response(for: request, subprotocol: nil))
                opened(leftover: consumed)
            }
        case .client(var clientHandshake):
            let result = clientHandshake.parseResponse(handshakeBytes)
            handshake = .client(clientHandshake)
            switch result {
            case .incomplete:
                return
            case .failed(let error):
                // RFC 6455 4.1: "the client MUST _Fail the WebSocket Connection_".
                outcome = .handshakeFailed(error)
                phase = .ending
                channel.close()
            case .accepted(_, let consumed):
                opened(leftover: consumed)
            }
        }
    }

    /// Switches to frames; bytes that followed the handshake in the same reads are frames the
    /// peer pipelined, and are parsed at once.
    private func opened(leftover consumed: Int) {
        phase = .open
        if let timer {
            channel.loop.cancel(timer)
            self.timer = nil
        }
        let leftover = Array(handshakeBytes[consumed...])
        handshakeBytes = []
        onOpen?()
        guard phase == .open else { return }
        if !leftover.isEmpty {
            connection.append(leftover)
            drainEvents()
        }
    }

    /// Handles every event the bytes appended so far produce, writing each reply in order.
    private func drainEvents() {
        while phase == .open, let event = connection.nextEvent() {
            switch event {
            case .text(let text):
                if echoes {
                    channel.write(connection.sendText(text))
                }
                onText?(text)
            case .binary(let bytes):
                if echoes {
                    channel.write(connection.sendBinary(bytes))
                }
            case .send(let bytes):
                channel.write(bytes)
            case .ping, .pong:
                // The pong answering a ping is in the `.send` event before `.ping`.
                break
            case .closed(let code, let reason):
                outcome = .closed(code: code, reason: reason)
                end()
            case .failed(let error):
                outcome = .failed(error)
                end()
            }
        }
    }

    /// After the closing handshake (or after failing the connection, our Close sent).
    ///
    /// RFC 6455 7.1.1: "The underlying TCP connection, in most normal cases, SHOULD be closed
    /// first by the server". The server sends what is pending, shuts down its side and closes
    /// once the client does (or after the channel's close timeout); the client waits a bounded
    /// time for the server's TCP close.
    private func end() {
        phase = .ending
        switch connection.role {
        case .server:
            channel.closeAfterFlush()
        case .client:
            timer = channel.loop.schedule(after: Self.clientCloseWaitMilliseconds) { [self] in
                timer = nil
                channel.close()
            }
        }
    }

    private func channelClosed(_ reason: StreamChannel.CloseReason) {
        if let timer {
            channel.loop.cancel(timer)
            self.timer = nil
        }
        phase = .ending
        let callback = onFinish
        onFinish = nil
        onText = nil
        onOpen = nil
        callback?(outcome ?? .dropped(reason))
    }
}
