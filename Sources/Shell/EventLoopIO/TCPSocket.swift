import Glibc

/// Outgoing TCP connections.
public enum TCPSocket {
    /// Starts a nonblocking connect to `host` (a literal IPv4/IPv6 address or a name resolved
    /// with `getaddrinfo`, which may block for names) and `port`.
    ///
    /// Returns a socket whose connect is in progress (or already done, for loopback): wait until
    /// it is writable, then call ``Socket/finishConnect()``; ``StreamChannel/connecting(_:loop:onConnected:)``
    /// does both. Addresses that fail at once (no route, family unsupported) are skipped in
    /// favour of the next resolved address.
    public static func connect(host: String, port: UInt16) throws -> Socket {
        let addresses = try SocketAddress.resolve(host: host, port: port, passive: false)
        var lastError = PosixError(call: "connect", errno: EADDRNOTAVAIL, detail: "no address for \(host)")
        for address in addresses {
            let socket = try Socket.make(family: address.family, remoteAddress: address.description)
            let fd = socket.descriptor
            let result = address.withSockAddr { pointer, length -> Int32 in
                Glibc.connect(fd, pointer, length) == 0 ? 0 : Glibc.errno
            }
            switch result {
            // "EINPROGRESS: The socket is nonblocking and the connection cannot be completed
            // immediately." After EINTR the connect also continues asynchronously.
            case 0, EINPROGRESS, EINTR:
                return socket
            case EBADF, EFAULT:
                preconditionFailure("connect: \(PosixError(call: "connect", errno: result))")
            default:
                lastError = PosixError(call: "connect", errno: result)
                socket.close()
            }
        }
        throw lastError
    }
}
