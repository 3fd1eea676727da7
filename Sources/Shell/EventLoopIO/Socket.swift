internal import CLinux
import Glibc

/// The owner of one socket descriptor.
///
/// Exactly one `Socket` owns a descriptor; it is closed once, by ``close()`` or by `deinit`,
/// never twice. Hand the descriptor to another owner with ``takeDescriptor()``. A `Socket` is
/// used from one thread at a time.
public final class Socket {
    /// The descriptor, or -1 once closed or taken.
    public private(set) var descriptor: Int32
    /// The remote address this socket was accepted from or is connecting to, if known.
    public let remoteAddress: String?

    /// Takes ownership of `descriptor`.
    public init(adopting descriptor: Int32, remoteAddress: String? = nil) {
        precondition(descriptor >= 0, "Socket(adopting:) needs an open descriptor")
        self.descriptor = descriptor
        self.remoteAddress = remoteAddress
    }

    deinit {
        if descriptor >= 0 {
            Syscall.close(descriptor)
        }
    }

    /// `true` until the socket is closed or its descriptor is taken.
    public var isOpen: Bool { descriptor >= 0 }

    /// Closes the descriptor. Calling it again does nothing.
    public func close() {
        guard descriptor >= 0 else { return }
        let closing = descriptor
        descriptor = -1
        Syscall.close(closing)
    }

    /// Gives up ownership: returns the descriptor, which the caller must close.
    public func takeDescriptor() -> Int32 {
        precondition(descriptor >= 0, "takeDescriptor() on a closed socket")
        let taken = descriptor
        descriptor = -1
        return taken
    }

    private var open: Int32 {
        precondition(descriptor >= 0, "use of a closed socket")
        return descriptor
    }

    // MARK: Options

    /// Sets or clears `O_NONBLOCK`.
    public func setNonBlocking(_ enabled: Bool) throws {
        let fd = open
        let flags = try Syscall.call("fcntl(F_GETFL)") { fcntl(fd, F_GETFL) }
        let updated = enabled ? flags | O_NONBLOCK : flags & ~O_NONBLOCK
        if updated != flags {
            _ = try Syscall.call("fcntl(F_SETFL)") { fcntl(fd, F_SETFL, updated) }
        }
    }

    /// Disables (or re-enables) Nagle's algorithm (`TCP_NODELAY`).
    public func setNoDelay(_ enabled: Bool) throws {
        try setOption(Int32(IPPROTO_TCP), TCP_NODELAY, enabled ? 1 : 0, "setsockopt(TCP_NODELAY)")
    }

    /// Enables TCP keepalive probes (`SO_KEEPALIVE`), optionally with the idle time, interval
    /// and probe count after which a silent peer is declared dead. The kernel counts the times
    /// in whole seconds (tcp(7)); they are rounded down, to at least one second.
    public func setKeepAlive(
        _ enabled: Bool, idle: Duration? = nil,
        interval: Duration? = nil, probes: Int32? = nil
    ) throws {
        try setOption(SOL_SOCKET, SO_KEEPALIVE, enabled ? 1 : 0, "setsockopt(SO_KEEPALIVE)")
        if let idle {
            try setOption(Int32(IPPROTO_TCP), TCP_KEEPIDLE, Self.keepAliveSeconds(idle), "setsockopt(TCP_KEEPIDLE)")
        }
        if let interval {
            try setOption(
                Int32(IPPROTO_TCP), TCP_KEEPINTVL, Self.keepAliveSeconds(interval), "setsockopt(TCP_KEEPINTVL)")
        }
        if let probes {
            try setOption(Int32(IPPROTO_TCP), TCP_KEEPCNT, probes, "setsockopt(TCP_KEEPCNT)")
        }
    }

    /// Ends the connection when data sent stays unacknowledged for `timeout`
    /// (`TCP_USER_TIMEOUT`, tcp(7)); with keepalive on, it also bounds how long probes go
    /// unanswered. Milliseconds, at least one.
    public func setUserTimeout(_ timeout: Duration) throws {
        let (seconds, attoseconds) = timeout.components
        let millis = Int32(clamping: max(1, seconds * 1000 + attoseconds / 1_000_000_000_000_000))
        try setOption(Int32(IPPROTO_TCP), TCP_USER_TIMEOUT, millis, "setsockopt(TCP_USER_TIMEOUT)")
    }

    /// `TCP_KEEPIDLE` and `TCP_KEEPINTVL` take whole seconds from 1 up.
    private static func keepAliveSeconds(_ duration: Duration) -> Int32 {
        Int32(clamping: max(1, duration.components.seconds))
    }

    func setOption(_ level: Int32, _ name: Int32, _ value: Int32, _ call: StaticString) throws {
        let fd = open
        var value = value
        _ = try Syscall.call(call) {
            setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
        }
    }

    /// The pending socket error (`SO_ERROR`), clearing it; 0 when there is none.
    public func pendingError() throws -> Int32 {
        let fd = open
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        _ = try Syscall.call("getsockopt(SO_ERROR)") {
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &value, &length)
        }
        return value
    }

    /// Completes a nonblocking connect once the socket reported writable (or an error):
    /// returns normally when connected, throws `PosixError(call: "connect", ...)` otherwise.
    public func finishConnect() throws {
        let code = try pendingError()
        if code != 0 {
            throw PosixError(call: "connect", errno: code)
        }
    }

    /// The local address as `ip:port` (or the path of a Unix socket).
    public func localAddress() throws -> String {
        try address(peer: false).description
    }

    /// The local port of a TCP socket.
    public func localPort() throws -> UInt16 {
        try address(peer: false).port
    }

    /// The peer address as `ip:port` (`[ip]:port` for IPv6); throws `ENOTCONN` when unconnected.
    public func peerAddress() throws -> String {
        try address(peer: true).description
    }

    func address(peer: Bool) throws -> SocketAddress {
        let fd = open
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        try withUnsafeMutablePointer(to: &storage) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                if peer {
                    _ = try Syscall.call("getpeername") { getpeername(fd, address, &length) }
                } else {
                    _ = try Syscall.call("getsockname") { getsockname(fd, address, &length) }
                }
            }
        }
        return withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { SocketAddress($0, length: length) }
        }
    }

    // MARK: I/O

    /// Receives up to `buffer.count` bytes; `.value(0)` means end of stream.
    public func receive(into buffer: UnsafeMutableRawBufferPointer) throws -> IOResult<Int> {
        let fd = open
        return try Syscall.nonBlocking("recv") { recv(fd, buffer.baseAddress, buffer.count, 0) }
    }

    /// Sends bytes without raising `SIGPIPE` (`MSG_NOSIGNAL`); returns how many were taken.
    public func send(_ bytes: UnsafeRawBufferPointer) throws -> IOResult<Int> {
        let fd = open
        return try Syscall.nonBlocking("send") {
            Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
        }
    }

    /// Sends the buffers in order in one `sendmsg` (a gathering write, `MSG_NOSIGNAL`); returns
    /// how many bytes were taken, from the first buffer on. At most `IOV_MAX` buffers.
    func send(gathering buffers: UnsafeMutableBufferPointer<iovec>) throws -> IOResult<Int> {
        let fd = open
        var header = msghdr()
        header.msg_iov = buffers.baseAddress
        header.msg_iovlen = buffers.count
        return try Syscall.nonBlocking("sendmsg") { Glibc.sendmsg(fd, &header, Int32(MSG_NOSIGNAL)) }
    }

    /// Shuts down the sending direction: the peer reads end of stream after our last byte.
    public func shutdownWrite() throws {
        let fd = open
        do {
            _ = try Syscall.call("shutdown") { shutdown(fd, Int32(SHUT_WR)) }
        } catch let error as PosixError where error.errno == ENOTCONN {
            // The peer already reset the connection; nothing is left to shut down.
        }
    }

    // MARK: Creation

    /// Creates a close-on-exec socket, nonblocking unless `blocking` is set.
    static func make(family: Int32, blocking: Bool = false, remoteAddress: String? = nil) throws -> Socket {
        var type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        if !blocking {
            type |= Int32(SOCK_NONBLOCK.rawValue)
        }
        let fd = try Syscall.call("socket") { socket(family, type, 0) }
        return Socket(adopting: fd, remoteAddress: remoteAddress)
    }
}
