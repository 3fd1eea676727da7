import Logging
import Posix
import SyncCore
import WebSocket

/// One terminal connected to the master: its opening handshake, then its WebSocket link.
final class TerminalSession {
    enum Phase: Equatable {
        /// Waiting for the HTTP upgrade request.
        case handshaking
        /// An OrderSync slave: waiting for its `hello` before the snapshot.
        case awaitingHello
        /// Receives broadcasts.
        case live
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
    var terminalId: String?
    var terminalName: String?
    var handshakeTimer: TimerHandle?
    /// The last sequence the slave said it applied (hello, then acks).
    var ackedSeq: Int64?
    var messagesIn = 0
    var rejected = 0

    init(id: Int, channel: StreamChannel, address: String, now: Int64, configuration: WebSocketConfiguration) {
        self.id = id
        self.channel = channel
        self.address = address
        self.connectedAt = now
        self.handshake = ServerHandshakeParser(configuration: configuration)
    }

    /// A short label for logs: the terminal name when known, else the address.
    var label: String { terminalName ?? address }

    func close(code: CloseCode, reason: String) {
        if let l = link {
            l.close(code: code, reason: reason)
        } else {
            channel.close()
        }
    }
}
