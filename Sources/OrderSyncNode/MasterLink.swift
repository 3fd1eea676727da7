import Foundation
import Posix
import SyncCore
import WebSocket

/// A slave's connection to its master: TCP connect, the client side of the opening handshake,
/// then a `WebSocketLink`. One attempt per instance; the slave makes a new one to reconnect.
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
    private let configuration: WebSocketConfiguration
    private var channel: StreamChannel?
    private var handshake: ClientHandshake
    private var pending: [UInt8] = []
    private var timer: TimerHandle?
    private(set) var link: WebSocketLink?
    private var ended = false
    /// How long a started frame from the master may take.
    var frameDeadlineMillis = NodeDefaults.frameTimeout.wholeMilliseconds

    /// The handshake succeeded; `subprotocol` is what the master chose.
    var onOpen: (_ subprotocol: String?) -> Void = { _ in }
    /// A text message from the master.
    var onText: (String) -> Void = { _ in }
    /// The attempt failed or the link ended. Once.
    var onEnd: (_ code: UInt16?, _ reason: String) -> Void = { _, _ in }

    init(url: MasterURL, loop: EventLoop, configuration: WebSocketConfiguration) {
        self.url = url
        self.loop = loop
        self.configuration = configuration
        var rng = SystemRandomNumberGenerator()
        let hostHeader = url.host.contains(":") ? "[\(url.host)]:\(url.port)" : "\(url.host):\(url.port)"
        self.handshake = ClientHandshake(host: hostHeader, path: url.path, key: ClientHandshake.makeKey(using: &rng),
                                         subprotocols: [orderSyncSubprotocol], configuration: configuration)
    }

    /// Starts connecting; the whole handshake must finish within `timeoutMillis`.
    func start(timeoutMillis: Int64 = 5000) {
        timer = loop.schedule(after: timeoutMillis) { [weak self] in
            guard let self = self, self.link == nil else { return }
            self.channel?.close()
            self.finish(code: nil, reason: "no WebSocket connection within \(timeoutMillis) ms")
        }
        guard HostResolver.isNumeric(url.host) else {
            // A host name is looked up on a thread of its own: a slow DNS server must not stall
            // the event loop (the local API, the replica, everything).
            HostResolver.resolve(host: url.host, port: url.port, on: loop) { [weak self] result in
                guard let self = self, !self.ended else { return }
                switch result {
                case .success(let addresses):
                    guard let first = addresses.first else {
                        self.finish(code: nil, reason: "no address for \(self.url.host)")
                        return
                    }
                    self.connect(to: first)
                case .failure(let error):
                    self.finish(code: nil, reason: "\(error)")
                }
            }
            return
        }
        connect(to: url.host)
    }

    private func connect(to host: String) {
        do {
            let socket = try TCPSocket.connect(host: host, port: url.port)
            try? socket.setNoDelay(true)
            let request = handshake.requestBytes
            let ch = try StreamChannel.connecting(socket, loop: loop) { channel in
                channel.write(request)
            }
            ch.maxPendingBytes = NodeDefaults.maxPendingSendBytes
            channel = ch
            ch.onRead = { [weak self] bytes in self?.handshakeBytes(bytes) }
            ch.onClose = { [weak self] reason in self?.finish(code: nil, reason: "\(reason)") }
        } catch {
            // Report on the next loop turn so the caller's bookkeeping is done first.
            loop.execute { [weak self] in self?.finish(code: nil, reason: "\(error)") }
        }
    }

    private func handshakeBytes(_ bytes: [UInt8]) {
        guard link == nil, let ch = channel else { return }
        pending += bytes
        switch handshake.parseResponse(pending) {
        case .incomplete:
            return
        case .failed(let error):
            ch.close()
            finish(code: nil, reason: "master refused the WebSocket handshake: \(error)")
        case .accepted(let subprotocol, let consumed):
            if let t = timer { loop.cancel(t) }
            timer = nil
            let rest = Array(pending[consumed...])
            pending = []
            let l = WebSocketLink(channel: ch, loop: loop, role: .client, configuration: configuration)
            l.frameDeadlineMillis = frameDeadlineMillis
            link = l
            l.onText = { [weak self] text in self?.onText(text) }
            l.onEnd = { [weak self] ending in self?.finish(code: ending.code, reason: ending.reason) }
            onOpen(subprotocol)
            if !rest.isEmpty { l.receive(rest) }
        }
    }

    /// Sends a text message (after the handshake).
    func send(_ text: String) {
        link?.sendText(text)
    }

    /// Starts the close handshake, or drops a link still connecting.
    func close(code: CloseCode, reason: String) {
        if let l = link {
            l.close(code: code, reason: reason)
        } else {
            channel?.close()
            finish(code: nil, reason: reason)
        }
    }

    /// Drops the link at once.
    func abort(reason: String) {
        if let l = link {
            l.abort(reason: reason)
        } else {
            channel?.close()
            finish(code: nil, reason: reason)
        }
    }

    var isEnded: Bool { ended }

    private func finish(code: UInt16?, reason: String) {
        guard !ended else { return }
        ended = true
        if let t = timer { loop.cancel(t) }
        timer = nil
        onEnd(code, reason)
    }
}
