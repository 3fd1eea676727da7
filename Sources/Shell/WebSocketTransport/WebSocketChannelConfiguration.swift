import WebSocket

/// Everything a `WebSocketChannel` enforces besides the frame limits: its deadlines, its
/// heartbeat, its send buffer and whether it takes binary messages.
public struct WebSocketChannelConfiguration: Sendable, Equatable {
    /// Liveness of an open connection: a ping (or the owner's own message) after
    /// `idleInterval` without a byte from the peer, and the peer declared dead after
    /// `silenceLimit` without one.
    public struct Heartbeat: Sendable, Equatable {
        /// Silence after which the peer is pinged (and pinged again every half of it).
        public var idleInterval: Duration
        /// Silence after which the peer is declared dead and the connection dropped.
        public var silenceLimit: Duration

        /// A heartbeat from its two times; `silenceLimit` should exceed `idleInterval`.
        public init(idleInterval: Duration, silenceLimit: Duration) {
            self.idleInterval = idleInterval
            self.silenceLimit = silenceLimit
        }
    }

    /// Message, frame, fragment and handshake-head limits of the pure state machines.
    public var limits: WebSocketConfiguration
    /// How long the opening handshake may take: from the accept (server), or from the start of
    /// the name lookup or connect (client), to the end of the handshake. A peer that trickles its
    /// request (slowloris) is dropped after this.
    public var handshakeDeadline: Duration
    /// How long a frame, or a fragmented message, may take from its first byte to its last;
    /// `nil` for no limit. A peer that starts a frame and then stalls is failed with 1008.
    public var frameDeadline: Duration?
    /// Pings and the dead-peer limit; `nil` for none.
    public var heartbeat: Heartbeat?
    /// How long the peer may take to answer a Close we sent before TCP is dropped.
    public var closeTimeout: Duration
    /// (Client) how long to wait for the server to close TCP after the closing handshake.
    /// RFC 6455 7.1.1: "the client SHOULD wait for the server to close the connection but MAY
    /// close the connection at any time after sending and receiving a Close message, e.g., if
    /// it has not received a TCP Close from the server in a reasonable time period."
    public var clientCloseWait: Duration
    /// Bytes a peer that does not read may leave unsent before the connection is dropped
    /// (`StreamChannel.maxPendingBytes`).
    public var maxPendingSendBytes: Int
    /// The low-water mark of unsent bytes below which ``WebSocketChannel/onSendDrained`` is
    /// called again (`StreamChannel.drainedThreshold`).
    public var sendLowWaterBytes: Int
    /// The most bytes read per readiness notification (`StreamChannel.maxReadBytes`).
    public var maxReadBytes: Int
    /// Whether binary messages are delivered. When `false` (text-only), a binary message
    /// closes the connection with 1003 (RFC 6455 7.4.1: "an endpoint is terminating the
    /// connection because it has received a type of data it cannot accept").
    public var acceptsBinary: Bool

    /// A configuration; every time has a default suited to a LAN.
    public init(
        limits: WebSocketConfiguration = WebSocketConfiguration(),
        handshakeDeadline: Duration = .seconds(5),
        frameDeadline: Duration? = .seconds(15),
        heartbeat: Heartbeat? = nil,
        closeTimeout: Duration = .seconds(2),
        clientCloseWait: Duration = .seconds(2),
        maxPendingSendBytes: Int = 16 << 20,
        maxReadBytes: Int = 64 << 10,
        acceptsBinary: Bool = false,
        sendLowWaterBytes: Int = 1 << 20
    ) {
        self.limits = limits
        self.handshakeDeadline = handshakeDeadline
        self.frameDeadline = frameDeadline
        self.heartbeat = heartbeat
        self.closeTimeout = closeTimeout
        self.clientCloseWait = clientCloseWait
        self.maxPendingSendBytes = maxPendingSendBytes
        self.maxReadBytes = maxReadBytes
        self.acceptsBinary = acceptsBinary
        self.sendLowWaterBytes = sendLowWaterBytes
    }
}
