import EventLoopIO
import WebSocket
import WebSocketTransport

/// One terminal connected to the master: the node's view of it over its WebSocket transport.
final class TerminalSession {
    /// Where the terminal is, as far as the node and its engine are concerned.
    enum Phase: Equatable {
        /// In the opening handshake; the engine does not know it yet.
        case handshaking
        /// The WebSocket is open and the engine knows the terminal (the sync state is the
        /// engine's).
        case open
        /// Gone, and the engine told.
        case ended
    }

    let id: Int
    let transport: WebSocketChannel
    let address: String
    /// When the connection was accepted, on the loop's clock.
    let connectedAt: MonotonicInstant
    var phase: Phase = .handshaking
    /// True when it asked for the `ordersync.v1` subprotocol; StorePOS terminals do not.
    var speaksOrderSync = false

    init(id: Int, transport: WebSocketChannel, address: String, now: MonotonicInstant) {
        self.id = id
        self.transport = transport
        self.address = address
        self.connectedAt = now
    }

    /// The WebSocket once open; `nil` during the handshake and after the end.
    var link: WebSocketChannel? { phase == .open ? transport : nil }

    /// Starts the closing handshake, or drops a terminal still in the opening handshake.
    func close(code: CloseCode, reason: String) {
        transport.close(code: code, reason: reason)
    }
}
