import Posix
import WebSocket

/// A WebSocket echo server: every text or binary message a client sends comes back with the
/// same type. It answers the opening handshake with the project's `ServerHandshakeParser`, so
/// refused handshakes get the module's HTTP errors.
final class EchoServer {
    /// The loop every connection runs on.
    let loop: EventLoop
    /// The limits applied to every connection.
    let configuration: WebSocketConfiguration
    /// The port actually bound (useful after asking for port 0).
    let port: UInt16
    /// The most connections served at once; further ones are accepted and closed at once.
    let maxConnections: Int

    private let acceptor: Acceptor
    private var connectionCount = 0

    /// Bytes a slow reader may leave unsent before its connection is closed: an echo of the
    /// largest message plus room for the frames behind it.
    private var sendBufferLimit: Int { configuration.maxMessageSize * 2 + (1 << 20) }

    /// Binds `host:port` and starts accepting on `loop`.
    init(host: String, port: UInt16, configuration: WebSocketConfiguration,
         maxConnections: Int = 256, loop: EventLoop) throws {
        let listener = try TCPListener.bind(host: host, port: port)
        self.loop = loop
        self.configuration = configuration
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

    /// Stops accepting; connections in progress continue until they end.
    func close() {
        acceptor.close()
    }

    private func serve(_ accepted: AcceptedSocket) {
        guard connectionCount < maxConnections else {
            accepted.socket.close()
            return
        }
        let channel: StreamChannel
        do {
            try accepted.socket.setNoDelay(true)
            channel = try StreamChannel(socket: accepted.socket, loop: loop)
        } catch {
            printError("cannot serve \(accepted.peerAddress): \(error)")
            accepted.socket.close()
            return
        }
        channel.maxReadBytes = 256 << 10
        channel.maxPendingBytes = sendBufferLimit
        connectionCount += 1
        let session = EchoSession.serve(channel, configuration: configuration)
        session.onFinish = { [unowned self] _ in
            connectionCount -= 1
        }
    }
}
