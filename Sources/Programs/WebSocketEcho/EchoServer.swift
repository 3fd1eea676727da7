import EventLoopIO
import WebSocket
import WebSocketTransport

/// A WebSocket echo server: every text or binary message a client sends comes back with the
/// same type. Each connection is the daemon's `WebSocketChannel` with an echo handler plugged
/// in, so refused handshakes get the same HTTP errors as the master's.
final class EchoServer {
    /// The loop every connection runs on.
    let loop: EventLoop
    /// The limits and deadlines applied to every connection.
    let configuration: WebSocketChannelConfiguration
    /// The port actually bound (useful after asking for port 0).
    let port: UInt16
    /// The most connections served at once; further ones are accepted and closed at once.
    let maxConnections: Int

    private let acceptor: Acceptor
    private var connectionCount = 0

    /// Binds `host:port` and starts accepting on `loop`.
    init(
        host: String, port: UInt16, limits: WebSocketConfiguration,
        maxConnections: Int = 256, loop: EventLoop
    ) throws {
        let listener = try TCPListener.bind(host: host, port: port)
        self.loop = loop
        self.configuration = EchoServer.channelConfiguration(limits)
        self.port = listener.localPort
        self.maxConnections = maxConnections
        // The acceptor's callback is replaced below, once `self` is fully initialized.
        self.acceptor = try Acceptor(listener: listener, loop: loop) { accepted in
            accepted.socket.close()
        }
        acceptor.onAccept = { [unowned self] accepted in serve(accepted) }
        acceptor.onError = { error in
            printError("accept failed, pausing: \(error)")
        }
    }

    /// The echo tool's connections, both roles: binary accepted (it is echoed), a send buffer
    /// that holds an echo of the largest message plus the frames behind it, large reads, and a
    /// frame deadline loose enough for the largest Autobahn messages.
    static func channelConfiguration(_ limits: WebSocketConfiguration) -> WebSocketChannelConfiguration {
        WebSocketChannelConfiguration(
            limits: limits, handshakeDeadline: .seconds(5), frameDeadline: .seconds(60),
            heartbeat: nil, maxPendingSendBytes: limits.maxMessageSize * 2 + (1 << 20),
            maxReadBytes: 256 << 10, acceptsBinary: true)
    }

    /// Stops accepting; connections in progress continue until they end.
    func close() {
        acceptor.close()
    }

    private func serve(_ accepted: AcceptedSocket) {
        guard connectionCount < maxConnections else {
            accepted.socket.close()
            return
        }
        let webSocket: WebSocketChannel
        do {
            // No subprotocol is selected: the echo server speaks none.
            webSocket = try WebSocketChannel.accept(accepted.socket, loop: loop, configuration: configuration) { _ in
                .accept(subprotocol: nil)
            }
        } catch {
            printError("cannot serve \(accepted.peerAddress): \(error)")
            accepted.socket.close()
            return
        }
        connectionCount += 1
        webSocket.onEvent = { [unowned self, unowned webSocket] event in
            switch event {
            case .text, .binary:
                EchoServer.echo(event, on: webSocket)
            case .ended:
                connectionCount -= 1
            case .opened, .protocolError:
                break
            }
        }
    }

    /// Sends a received message back with the same type.
    static func echo(_ event: WebSocketChannel.Event, on webSocket: WebSocketChannel) {
        switch event {
        case .text(let text):
            webSocket.sendText(text)
        case .binary(let bytes):
            webSocket.sendBinary(bytes)
        case .opened, .protocolError, .ended:
            break
        }
    }
}
