import Glibc

/// A connected stream socket driven by an ``EventLoop``: reads are delivered to ``onRead``,
/// writes are buffered and flushed as the socket becomes writable, and ``onClose`` reports the
/// end exactly once.
///
/// The channel registers itself on the loop and stays alive while registered, so the caller
/// need not hold it. All members are used on the loop thread (asserted in debug builds); the
/// type is not `Sendable`, so the compiler keeps it from being handed to another thread. Set
/// the callbacks before control returns to the loop.
///
/// Writes go out at once when nothing is pending; the rest waits in an outbound buffer and the
/// channel watches `EPOLLOUT` only while that buffer is non-empty. A peer that does not read
/// makes the buffer grow; past ``maxPendingBytes`` the channel closes with
/// ``CloseReason/sendBufferOverflow`` rather than holding unbounded memory.
///
/// A ``StreamCodec`` (TLS) may sit between the socket and the owner
/// (``install(codec:replaying:)``): then ``onRead`` gets what it decoded, ``write(_:)`` sends
/// what it encoded, and ``pendingBytes`` counts the encoded bytes.
public final class StreamChannel {
    enum State {
        case connecting
        case open
        /// `closeAfterFlush()` (or end of stream with bytes pending): sending what is left.
        case flushingBeforeClose
        /// All sent and `SHUT_WR` done: discarding input until the peer closes too.
        case halfClosed
        case closed
    }

    /// The loop this channel runs on.
    public let loop: EventLoop
    /// The peer as `ip:port` (`[ip]:port` for IPv6), or the socket path for Unix sockets.
    public internal(set) var peerAddress: String
    /// Called on the loop thread with each chunk read (at most ``maxReadBytes`` per readiness).
    public var onRead: (([UInt8]) -> Void)?
    /// Called once, on the loop thread, after the channel closed; never from inside a call to
    /// ``write(_:)``, ``close()`` or ``closeAfterFlush()`` (it runs after the current handler).
    public var onClose: ((CloseReason) -> Void)?
    /// The most bytes that may wait in the outbound buffer (default 16 MiB).
    public var maxPendingBytes = 16 << 20
    /// The most bytes read per readiness notification (default 64 KiB, at most 256 KiB).
    public var maxReadBytes = 64 << 10
    /// How long ``closeAfterFlush()`` may go without the socket accepting a byte (a peer that
    /// stopped reading, or that never closes its end) before the channel is closed anyway.
    /// A loop busy past it does not count as the peer's silence: the channel tries to send first.
    public var closeTimeout: Duration = .seconds(5)
    /// The longest ``closeAfterFlush()`` may take however steadily the peer reads (default
    /// 120 s: a 16 MiB answer, the most ``maxPendingBytes`` holds, at 140 KB/s), so a peer that
    /// reads a trickle cannot hold the connection and its buffer for ever.
    public var closeLimit: Duration = .seconds(120)
    /// Whether bytes waiting while the channel is open are bounded as a close is
    /// (`StreamChannel+PendingDeadline.swift`): once the socket has taken no byte for
    /// ``closeTimeout``, or bytes have waited without a break for ``closeLimit``, the channel
    /// closes with `ETIMEDOUT`. Off by default (a WebSocket link has its own heartbeat).
    public var boundsPendingWrites = false
    /// Bytes accepted by ``write(_:)`` but not yet handed to the kernel.
    public internal(set) var pendingBytes = 0
    /// Called on the loop thread when a flush brings ``pendingBytes`` from above
    /// ``drainedThreshold`` to at most it: the owner may write more (flow control).
    public var onDrained: (() -> Void)?
    /// The low-water mark for ``onDrained`` (default 1 MiB).
    public var drainedThreshold = 1 << 20
    /// The layer (TLS) between the socket and ``onRead``/``write(_:)``, if any: see
    /// ``install(codec:replaying:)``.
    public internal(set) var codec: (any StreamCodec)?

    let socket: Socket
    let descriptor: Int32
    var state: State
    var outbound: [[UInt8]] = []
    var outboundHead = 0
    var headOffset = 0
    var peerEnded = false
    var reasonAfterFlush = CloseReason.localClose
    var closeTimer: TimerHandle?
    var closeDeadline: CloseDeadline?
    var pendingTimer: TimerHandle?
    var pendingDeadline: CloseDeadline?
    var closeWhenConnected = false
    var onConnected: ((StreamChannel) -> Void)?

    /// Adopts a connected, nonblocking socket and starts reading.
    public convenience init(socket: Socket, loop: EventLoop) throws {
        try self.init(socket: socket, loop: loop, state: .open)
    }

    /// Adopts a socket whose nonblocking connect is in progress (from
    /// ``TCPSocket/connect(host:port:)``). `onConnected` runs once it is connected; a failed
    /// connect calls ``onClose`` with ``CloseReason/error(_:)`` (e.g. `ECONNREFUSED`) instead.
    /// Writes made before the connection completes are buffered.
    public static func connecting(
        _ socket: Socket, loop: EventLoop,
        onConnected: @escaping (StreamChannel) -> Void
    ) throws -> StreamChannel {
        let channel = try StreamChannel(socket: socket, loop: loop, state: .connecting)
        channel.onConnected = onConnected
        return channel
    }

    private init(socket: Socket, loop: EventLoop, state: State) throws {
        precondition(socket.isOpen, "StreamChannel needs an open socket")
        self.loop = loop
        self.socket = socket
        self.descriptor = socket.descriptor
        self.state = state
        loop.assertInEventLoop()
        self.peerAddress = socket.remoteAddress ?? (try? socket.peerAddress()) ?? "unknown"
        let interest: Interest = state == .connecting ? .writable : .readable
        try loop.register(fd: descriptor, interest: interest) { readiness in
            // The loop holds the channel through this closure until it is unregistered.
            self.handle(readiness)
        }
    }

    /// `true` until the channel closed (it stays `true` while ``closeAfterFlush()`` runs).
    public var isOpen: Bool { state != .closed }

    /// The credentials of the process at the other end of a Unix domain socket
    /// (`SO_PEERCRED`); throws `EBADF` once the channel is closed.
    public func peerCredentials() throws -> PeerCredentials {
        guard socket.isOpen else { throw PosixError(call: "getsockopt(SO_PEERCRED)", errno: EBADF) }
        return try socket.peerCredentials()
    }

    /// `true` while writes are accepted (connected or connecting, and no close requested).
    public var isWritable: Bool { state == .open || state == .connecting }
}
