import EventLoopIO
import SyncCore
import WebSocket
import WebSocketTransport

/// A slave's connection to its master: one `WebSocketChannel` offering the OrderSync
/// subprotocol, with what the slave calls on it. One attempt per instance; the slave makes a new
/// one to reconnect.
final class MasterLink {
    /// Where the link is.
    enum Phase: String {
        case idle
        case connecting
        case handshaking
        /// Handshake done, hello sent, receiving the snapshot.
        case syncing
        /// Up to date; live operations flow.
        case live
    }

    let url: MasterURL
    private let loop: EventLoop
    private let configuration: WebSocketChannelConfiguration
    private var transport: WebSocketChannel?

    /// The handshake succeeded; `subprotocol` is what the master chose.
    var onOpen: (_ subprotocol: String?) -> Void = { _ in }
    /// A text message from the master.
    var onText: (String) -> Void = { _ in }
    /// The master went silent past the dead-peer limit; `onEnd` follows.
    var onDead: (_ silence: Duration) -> Void = { _ in }
    /// The attempt failed or the link ended. Once.
    var onEnd: (_ code: UInt16?, _ reason: String) -> Void = { _, _ in }

    init(url: MasterURL, loop: EventLoop, configuration: WebSocketChannelConfiguration) {
        self.url = url
        self.loop = loop
        self.configuration = configuration
    }

    /// Starts connecting; the whole handshake must finish within the configuration's deadline.
    func start() {
        let transport = WebSocketChannel.connect(
            host: url.host, port: url.port, path: url.path,
            subprotocols: [orderSyncSubprotocol], loop: loop,
            configuration: configuration)
        self.transport = transport
        transport.onEvent = { [weak self] event in
            guard let self = self else { return }
            switch event {
            case .opened(let opening):
                self.onOpen(opening.subprotocol)
            case .text(let text):
                self.onText(text)
            case .binary, .protocolError:
                break
            case .ended(let ending):
                if case .peerSilent(let silence) = ending.cause { self.onDead(silence) }
                self.onEnd(ending.closeCode?.rawValue, "\(ending)")
            }
        }
    }

    /// The WebSocket once open; `nil` before.
    var link: WebSocketChannel? {
        switch transport?.phase {
        case .open, .closing, .closed, .ended: return transport
        case .resolving, .handshaking, nil: return nil
        }
    }

    /// Sends a text message (after the handshake).
    func send(_ text: String) {
        transport?.sendText(text)
    }

    /// Starts the close handshake, or drops a link still connecting.
    func close(code: CloseCode, reason: String) {
        transport?.close(code: code, reason: reason)
    }

    /// Drops the link at once.
    func abort(reason: String) {
        transport?.abort(reason: reason)
    }

    /// Whether the link is gone (or never started).
    var isEnded: Bool { transport?.isEnded ?? true }
}
