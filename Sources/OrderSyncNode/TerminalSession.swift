import Logging
import Posix
import SyncCore
import WebSocket

/// One terminal connected to the master: its opening handshake, then its WebSocket link.
final class TerminalSession {
    enum Phase: Equatable {
        /// Waiting for the HTTP upgrade request.
        case handshaking
        /// The WebSocket link is open (the sync state is the engine's).
        case open
        /// Gone.
        case ended
    }

    let id: Int
    let channel: StreamChannel
    let address: String
    let connectedAt: Int64
    var phase: Phase = .handshaking
    var handshake: ServerHandshakeParser
    var pending: [UInt8] = []
    var link: WebSocketLink?
    /// True when it asked for the `ordersync.v1` subprotocol; StorePOS terminals do not.
    var speaksOrderSync = false
    var handshakeTimer: TimerHandle?

    init(id: Int, channel: StreamChannel, address: String, now: Int64, configuration: WebSocketConfiguration) {
        self.id = id
        self.channel = channel
        self.address = address
        self.connectedAt = now
        self.handshake = ServerHandshakeParser(configuration: configuration)
    }

    func close(code: CloseCode, reason: String) {
        if let l = link {
            l.close(code: code, reason: reason)
        } else {
            channel.close()
        }
    }
}
