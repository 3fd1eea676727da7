import Posix
import WebSocket

/// A WebSocket connection after its opening handshake: one `StreamChannel` carrying frames of
/// one `WebSocketConnection` state machine. Used by the master for each terminal and by the
/// slave for its master. Lives on the event-loop thread.
final class WebSocketLink {
    /// Why a link ended, for the logs.
    struct Ending {
        /// Close code received or sent, if there was a close handshake.
        var code: UInt16?
        /// Reason text or transport error.
        var reason: String
    }

    let channel: StreamChannel
    private var connection: WebSocketConnection
    private(set) var lastHeardMillis: Int64
    private(set) var isClosing = false
    private var ended = false
    private var closeTimer: TimerHandle?
    private var frameTimer: TimerHandle?
    /// How long a frame (or fragmented message) may take from its first byte to its last.
    var frameDeadlineMillis: Int64 = NodeDefaults.frameTimeout.wholeMilliseconds
    private let loop: EventLoop

    /// A text message arrived.
    var onText: (String) -> Void = { _ in }
    /// The link is gone (close handshake done, protocol error, or transport closed). Once.
    var onEnd: (Ending) -> Void = { _ in }
    /// A protocol violation by the peer (logged by the owner); `onEnd` follows.
    var onProtocolError: (WebSocketError) -> Void = { _ in }

    init(channel: StreamChannel, loop: EventLoop, role: WebSocketRole, configuration: WebSocketConfiguration) {
        self.channel = channel
        self.loop = loop
        self.connection = WebSocketConnection(role: role, configuration: configuration)
        self.lastHeardMillis = loop.now
        channel.onRead = { [weak self] bytes in self?.receive(bytes) }
        channel.onClose = { [weak self] reason in
            self?.finish(Ending(code: nil, reason: "\(reason)"))
        }
    }

    /// Feeds bytes read from the socket (also the bytes pipelined behind the handshake).
    func receive(_ bytes: [UInt8]) {
        guard !ended, !bytes.isEmpty else { return }
        lastHeardMillis = loop.now
        connection.append(bytes)
        while let event = connection.nextEvent() {
            switch event {
            case .text(let s):
                if !isClosing { onText(s) }
            case .binary:
                // StorePOS and OrderSync send JSON in text frames only.
                write(connection.close(code: .unsupportedData, reason: "only text messages are accepted"))
                isClosing = true
            case .ping, .pong:
                break
            case .send(let out):
                write(out)
            case .closed(let code, let reason):
                channel.closeAfterFlush()
                finish(Ending(code: code?.rawValue, reason: reason.isEmpty ? "closed by peer" : reason))
                return
            case .failed(let error):
                onProtocolError(error)
                channel.closeAfterFlush()
                finish(Ending(code: error.closeCode.rawValue, reason: "\(error)"))
                return
            }
        }
        watchFrameDeadline()
    }

    /// A peer that starts a frame and then stalls (slowloris) is dropped: the frame must be
    /// complete within `frameDeadlineMillis` of its first byte, however slowly bytes trickle in.
    private func watchFrameDeadline() {
        guard !ended else { return }
        if !connection.isAwaitingRestOfFrame {
            if let t = frameTimer { loop.cancel(t) }
            frameTimer = nil
            return
        }
        guard frameTimer == nil else { return }
        let limit = frameDeadlineMillis
        frameTimer = loop.schedule(after: limit) { [weak self] in
            guard let self = self, !self.ended else { return }
            self.frameTimer = nil
            self.write(self.connection.close(code: .policyViolation, reason: "frame not completed within \(limit / 1000) s"))
            self.channel.closeAfterFlush()
            self.finish(Ending(code: CloseCode.policyViolation.rawValue, reason: "frame not completed within \(limit) ms"))
        }
    }

    /// Sends one text message.
    func sendText(_ text: String) {
        guard !ended, !isClosing else { return }
        write(connection.sendText(text))
    }

    /// Sends pre-encoded frame bytes (a broadcast encoded once for every terminal; server role
    /// only, where frames are not masked).
    func sendEncoded(_ bytes: [UInt8]) {
        guard !ended, !isClosing else { return }
        write(bytes)
    }

    /// Pings the peer (liveness).
    func ping() {
        guard !ended, !isClosing else { return }
        write(connection.ping(Array("ordersync".utf8)))
    }

    /// Starts the close handshake; the transport is closed when the peer answers or after
    /// `timeoutMillis`.
    func close(code: CloseCode, reason: String, timeoutMillis: Int64 = 2000) {
        guard !ended, !isClosing else { return }
        isClosing = true
        write(connection.close(code: code, reason: reason))
        closeTimer = loop.schedule(after: timeoutMillis) { [weak self] in
            guard let self = self, !self.ended else { return }
            self.channel.close()
            self.finish(Ending(code: code.rawValue, reason: reason + " (peer did not answer the close)"))
        }
    }

    /// Drops the transport at once (dead peer).
    func abort(reason: String) {
        guard !ended else { return }
        channel.close()
        finish(Ending(code: nil, reason: reason))
    }

    var isEnded: Bool { ended }

    private func write(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        channel.write(bytes)
    }

    private func finish(_ ending: Ending) {
        guard !ended else { return }
        ended = true
        if let t = closeTimer { loop.cancel(t) }
        closeTimer = nil
        if let t = frameTimer { loop.cancel(t) }
        frameTimer = nil
        onEnd(ending)
    }
}
