import Glibc

/// A listening TCP socket (close-on-exec, nonblocking, `SO_REUSEADDR`).
public final class TCPListener: ListeningSocket {
    private let socket: Socket
    /// The port actually bound (useful after binding port 0).
    public let localPort: UInt16
    /// The bound address as `ip:port`.
    public let localAddress: String

    private init(socket: Socket) throws {
        self.socket = socket
        self.localPort = try socket.localPort()
        self.localAddress = try socket.localAddress()
    }

    /// Binds and listens on `host` (`"0.0.0.0"`, `"::"`, a literal address or a name) and `port`
    /// (0 picks any free port; read it back from ``localPort``).
    ///
    /// `"::"` listens dual-stack (IPv4 and IPv6) by clearing `IPV6_V6ONLY`.
    public static func bind(host: String, port: UInt16, backlog: Int32 = 128) throws -> TCPListener {
        let addresses = try SocketAddress.resolve(host: host, port: port, passive: true)
        var lastError = PosixError(call: "bind", errno: EADDRNOTAVAIL, detail: "no address for \(host)")
        for address in addresses {
            do {
                let socket = try Socket.make(family: address.family)
                try socket.setOption(SOL_SOCKET, SO_REUSEADDR, 1, "setsockopt(SO_REUSEADDR)")
                if address.family == AF_INET6 {
                    try socket.setOption(Int32(IPPROTO_IPV6), IPV6_V6ONLY, 0, "setsockopt(IPV6_V6ONLY)")
                }
                let fd = socket.descriptor
                _ = try address.withSockAddr { pointer, length in
                    try Syscall.call("bind") { Glibc.bind(fd, pointer, length) }
                }
                _ = try Syscall.call("listen") { listen(fd, backlog) }
                return try TCPListener(socket: socket)
            } catch let error as PosixError {
                lastError = error
            }
        }
        throw lastError
    }

    /// The listening descriptor, for registration on an ``EventLoop``.
    public var descriptor: Int32 { socket.descriptor }

    /// Accepts one pending connection; `nil` when none is pending. See ``ListeningSocket``.
    public func accept() throws -> AcceptedSocket? {
        try ListenerSupport.accept(socket)
    }

    /// Stops listening. Unregister the descriptor from its loop first.
    public func close() {
        socket.close()
    }
}
