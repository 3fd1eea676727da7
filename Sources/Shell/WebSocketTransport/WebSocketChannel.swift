import EventLoopIO
import WebSocket

/// One WebSocket connection over a `StreamChannel`, either side: the opening handshake with its
/// deadline, then the frames of a `WebSocketConnection` state machine, with the frame deadline,
/// the heartbeat, the closing handshake and its timeout, and the send-buffer cap. The daemon's
/// terminals and its link to the master, and the conformance test peer, all run this type.
///
/// Everything happens on the loop thread. The owner sets ``onEvent`` (and ``onIdle``) before
/// control returns to the loop; events are never delivered from inside a call the owner makes
/// except text and binary messages it may answer at once. The channel keeps itself alive until
/// ``Event/ended(_:)``, which always comes last and exactly once.
///
/// ```
///   resolving ─▶ handshaking ─▶ open ─── close() ──▶ closing ─▶ closed ─▶ ended
///   (client)       │   │         │                       └── timeout ──▶ │
///                  │   │         └── peer's Close, failure, deadline ───▶ │
///                  │   └── rejected, failed, timed out ─────────────────▶ │
///                  └── TCP gone ───────────────────────────────────────────────▶ ended
/// ```
public final class WebSocketChannel {
    enum State {
        /// (Client) looking the host name up off the loop.
        case resolving
        /// TCP connecting (client) and the opening handshake.
        case handshaking(StreamChannel)
        /// Messages flow both ways.
        case open(StreamChannel)
        /// Our Close frame was sent; waiting for the peer's.
        case closing(StreamChannel)
        /// The WebSocket is over for this reason; TCP is being closed.
        case closed(StreamChannel, Ending)
        /// TCP closed and ``Event/ended(_:)`` delivered.
        case ended
    }

    /// Where a connection is in its life (see the diagram on the type).
    public enum Phase: Equatable, Sendable {
        /// (Client) looking the host name up.
        case resolving
        /// Connecting and in the opening handshake.
        case handshaking
        /// Messages flow both ways.
        case open
        /// Our Close was sent; waiting for the peer's.
        case closing
        /// The WebSocket is over; TCP is being closed.
        case closed
        /// Gone; ``Event/ended(_:)`` was delivered.
        case ended
    }

    enum Handshake {
        case server(ServerHandshakeParser, decide: (HandshakeRequest) -> HandshakeDecision)
        case client(ClientHandshake)
    }

    /// The loop everything runs on.
    public let loop: EventLoop
    /// Which end of the connection this is.
    public let role: WebSocketRole
    /// The deadlines and limits in force.
    public let configuration: WebSocketChannelConfiguration
    /// When a byte last came from the peer, on the loop's clock (``EventLoop/now``).
    public internal(set) var lastHeard: MonotonicInstant
    /// Receives every event; see ``Event``.
    public var onEvent: ((Event) -> Void)?
    /// Called when the peer has been silent for the heartbeat's idle interval; the owner may
    /// send a message of its own and answer ``IdleResponse/sentHeartbeat``. Unset: a ping.
    public var onIdle: (() -> IdleResponse)?
    /// When true, a peer silent past the heartbeat's silence limit is not dropped: it is still
    /// pinged, and the link lasts while TCP holds it (a peer that cannot answer pings while it
    /// sleeps, such as a locked iPad's app; the owner sets TCP keepalive to find dead hosts).
    public var toleratesSilence = false
    /// With ``toleratesSilence``: called once each time the peer has been silent past the
    /// silence limit (again only after it was heard from in between), with how long.
    public var onSilenceTolerated: ((Duration) -> Void)?
    /// The ``lastHeard`` of the silence last reported through ``onSilenceTolerated``.
    var toleratedSilenceSince: MonotonicInstant?

    /// Called while open when the unsent bytes fall from above
    /// ``WebSocketChannelConfiguration/sendLowWaterBytes`` to at most it: the owner may send
    /// more (flow control for long transfers, see ``pendingSendBytes``).
    public var onSendDrained: (() -> Void)?

    /// Messages and frame bytes this connection received and sent (``TrafficCounts``).
    public internal(set) var traffic = TrafficCounts()

    /// Bytes sent but not yet handed to the kernel (0 before the handshake and after the end).
    public var pendingSendBytes: Int { streamChannel?.pendingBytes ?? 0 }

    var state: State
    var handshake: Handshake
    /// Bytes received during the opening handshake (the request or response head so far, then
    /// any frames pipelined behind it).
    var handshakeBuffer: [UInt8] = []
    var connection: WebSocketConnection
    /// The handshake deadline, then the close timeout or the client's wait for the TCP close:
    /// never two at once.
    var phaseTimer: TimerHandle?
    var frameTimer: TimerHandle?
    var heartbeatTimer: TimerHandle?

    init(
        loop: EventLoop, role: WebSocketRole, handshake: Handshake, state: State,
        configuration: WebSocketChannelConfiguration
    ) {
        self.loop = loop
        self.role = role
        self.handshake = handshake
        self.state = state
        self.configuration = configuration
        self.connection = WebSocketConnection(role: role, configuration: configuration.limits)
        self.lastHeard = loop.now
    }

    // MARK: - State

    /// Where the connection is.
    public var phase: Phase {
        switch state {
        case .resolving: return .resolving
        case .handshaking: return .handshaking
        case .open: return .open
        case .closing: return .closing
        case .closed: return .closed
        case .ended: return .ended
        }
    }

    /// Whether messages can be sent.
    public var isOpen: Bool { phase == .open }

    /// Whether ``Event/ended(_:)`` was delivered.
    public var isEnded: Bool { phase == .ended }

    /// The peer as `ip:port`, once connected.
    public var peerAddress: String? { streamChannel?.peerAddress }

    var streamChannel: StreamChannel? {
        switch state {
        case .handshaking(let channel), .open(let channel), .closing(let channel), .closed(let channel, _):
            return channel
        case .resolving, .ended:
            return nil
        }
    }

    /// Adopts `channel`: its reads and its end come to this connection.
    func attach(_ channel: StreamChannel) {
        channel.maxPendingBytes = configuration.maxPendingSendBytes
        channel.maxReadBytes = configuration.maxReadBytes
        channel.drainedThreshold = configuration.sendLowWaterBytes
        channel.onDrained = { [self] in
            guard case .open = state else { return }
            onSendDrained?()
        }
        channel.onRead = { [self] bytes in received(bytes) }
        channel.onClose = { [self] reason in channelClosed(reason) }
    }

    // MARK: - Limits

    /// The largest message (and frame) accepted from the peer now.
    public var messageLimit: Int { connection.configuration.maxMessageSize }

    /// Sets the largest message (and frame) accepted from the peer from now on: a frame whose
    /// header announces more fails the connection (1009) before any of its payload is buffered.
    /// A server starts a connection with a handshake-sized limit in ``configuration`` and raises
    /// it here once the peer has authenticated; frames pipelined behind the opening handshake
    /// are parsed only after ``Event/opened(_:)`` was handled, under the limit set then.
    public func setMessageLimit(_ bytes: Int) {
        connection.setMessageLimit(bytes)
    }

    // MARK: - Sending

    /// Sends one text message; ignored unless open.
    public func sendText(_ text: String) {
        guard case .open(let channel) = state else { return }
        let frame = connection.sendText(text)
        traffic.sent(frame.count)
        channel.write(frame)
    }

    /// Sends one text message given as UTF-8 bytes (serialized JSON, valid UTF-8 by
    /// construction); ignored unless open.
    public func sendText(utf8 bytes: [UInt8]) {
        guard case .open(let channel) = state else { return }
        let frame = connection.sendText(utf8: bytes)
        traffic.sent(frame.count)
        channel.write(frame)
    }

    /// Sends one binary message; ignored unless open.
    public func sendBinary(_ bytes: [UInt8]) {
        guard case .open(let channel) = state else { return }
        let frame = connection.sendBinary(bytes)
        traffic.sent(frame.count)
        channel.write(frame)
    }

    /// Sends frames encoded beforehand (a broadcast encoded once for every peer, see
    /// ``serverTextFrame(_:)``; or `messages` whole frames one after the other in one buffer, a
    /// snapshot's small parts written together, counted as that many messages); server side
    /// only, where frames are not masked. Ignored unless open.
    public func sendEncoded(_ frames: [UInt8], messages: Int = 1) {
        precondition(role == .server, "client frames must be masked one by one")
        guard case .open(let channel) = state else { return }
        traffic.sent(frames.count, messages: messages)
        channel.write(frames)
    }

    /// Sends frames encoded beforehand, in order, in one gathering write (all a terminal gets in
    /// one loop turn); server side only. Ignored unless open.
    public func sendEncoded(frames: [[UInt8]]) {
        precondition(role == .server, "client frames must be masked one by one")
        guard case .open(let channel) = state else { return }
        for frame in frames { traffic.sent(frame.count) }
        channel.write(gathering: frames)
    }

    /// An unmasked text frame carrying `text`, for ``sendEncoded(_:)`` on many connections.
    public static func serverTextFrame(_ text: String) -> [UInt8] {
        var text = text
        var output: [UInt8] = []
        text.withUTF8 { utf8 in
            FrameEncoder.append(opcode: .text, payload: UnsafeRawBufferPointer(utf8), maskingKey: nil, to: &output)
        }
        return output
    }

    /// An unmasked text frame carrying `bytes` (UTF-8 text: serialized JSON), for
    /// ``sendEncoded(_:)`` on many connections.
    public static func serverTextFrame(utf8 bytes: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        bytes.withUnsafeBytes { FrameEncoder.append(opcode: .text, payload: $0, maskingKey: nil, to: &output) }
        return output
    }

    /// An unmasked binary frame carrying `bytes` (a sealed message of one terminal's secure link).
    public static func serverBinaryFrame(_ bytes: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        bytes.withUnsafeBytes { FrameEncoder.append(opcode: .binary, payload: $0, maskingKey: nil, to: &output) }
        return output
    }

    /// Writes the header of an unmasked binary frame of `payloadLength` bytes into `output`, for a
    /// payload sealed in place after it (`SecureLink.seal(_:control:frameHeader:)`): the frame
    /// ``serverBinaryFrame(_:)`` would make of the same payload.
    public static func appendServerBinaryHeader(payloadLength: Int, to output: inout [UInt8]) {
        FrameEncoder.appendHeader(opcode: .binary, payloadLength: payloadLength, to: &output)
    }

    /// Pings the peer; ignored unless open.
    public func ping() {
        guard case .open(let channel) = state else { return }
        let frame = connection.ping(Array("ordersync".utf8))
        traffic.bytesOut += frame.count
        channel.write(frame)
    }

    // MARK: - Ending

    /// Starts the closing handshake (RFC 6455 7.1.2); TCP is dropped if the peer does not answer
    /// within ``WebSocketChannelConfiguration/closeTimeout``. Before the connection is open it
    /// drops the attempt instead.
    public func close(code: CloseCode = .normal, reason: String = "") {
        switch state {
        case .open(let channel):
            state = .closing(channel)
            stopOpenTimers()
            channel.write(connection.close(code: code, reason: reason))
            let timeout = configuration.closeTimeout
            phaseTimer = loop.schedule(after: timeout) { [self] in
                phaseTimer = nil
                guard case .closing(let channel) = state else { return }
                state = .closed(channel, Ending(.closeTimedOut(code, reason: reason)))
                channel.close()
            }
        case .resolving, .handshaking:
            abort(reason: reason)
        case .closing, .closed, .ended:
            return
        }
    }

    /// Drops the connection at once, without a closing handshake.
    public func abort(reason: String) {
        switch state {
        case .resolving:
            finish(Ending(.aborted(reason)))
        case .handshaking(let channel), .open(let channel), .closing(let channel):
            state = .closed(channel, Ending(.aborted(reason)))
            channel.close()
        case .closed(let channel, _):
            channel.close()
        case .ended:
            return
        }
    }

    /// The WebSocket is over (closing handshake done, or failed by either side): TCP follows.
    ///
    /// RFC 6455 7.1.1: "The underlying TCP connection, in most normal cases, SHOULD be closed
    /// first by the server". The server sends what is pending and shuts down its side; the
    /// client waits a bounded time for the server's TCP close, unless we are failing the
    /// connection ourselves (`promptly`).
    func webSocketEnded(_ channel: StreamChannel, _ ending: Ending, promptly: Bool = false) {
        state = .closed(channel, ending)
        stopOpenTimers()
        cancelPhaseTimer()
        if role == .server || promptly {
            channel.closeAfterFlush()
        } else {
            phaseTimer = loop.schedule(after: configuration.clientCloseWait) { [self] in
                phaseTimer = nil
                channel.close()
            }
        }
    }

    func channelClosed(_ reason: StreamChannel.CloseReason) {
        let ending: Ending
        switch state {
        case .closed(_, let recorded):
            ending = recorded
        case .handshaking, .open, .closing:
            ending = Ending(.dropped(reason))
        case .resolving, .ended:
            return
        }
        finish(ending)
    }

    /// Reports the end; the event is delivered on this loop turn but never from inside the
    /// owner's own call.
    func finish(_ ending: Ending) {
        let wasResolving = phase == .resolving
        state = .ended
        stopOpenTimers()
        cancelPhaseTimer()
        handshakeBuffer = []
        let deliver = { [self] in
            let callback = onEvent
            onEvent = nil
            onIdle = nil
            onSendDrained = nil
            onSilenceTolerated = nil
            callback?(.ended(ending))
        }
        if wasResolving {
            loop.runSoon(deliver)
        } else {
            // `StreamChannel.onClose` already runs after the current handler.
            deliver()
        }
    }

    func cancelPhaseTimer() {
        if let phaseTimer {
            loop.cancel(phaseTimer)
            self.phaseTimer = nil
        }
    }

    func stopOpenTimers() {
        if let frameTimer {
            loop.cancel(frameTimer)
            self.frameTimer = nil
        }
        if let heartbeatTimer {
            loop.cancel(heartbeatTimer)
            self.heartbeatTimer = nil
        }
    }
}
