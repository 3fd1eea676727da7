internal import CLinux
import Glibc

/// A connection taken from a listener's queue.
public struct AcceptedSocket {
    /// The connected socket (close-on-exec, nonblocking); the receiver now owns it.
    public let socket: Socket
    /// The peer as `ip:port` (`[ip]:port` for IPv6) or, for Unix sockets, `unix`.
    public let peerAddress: String
}

/// A listening socket that an ``Acceptor`` can drain.
public protocol ListeningSocket: AnyObject {
    /// The listening descriptor, for registration on an ``EventLoop``.
    var descriptor: Int32 { get }
    /// Accepts one pending connection; `nil` when none is pending.
    ///
    /// Throws ``PosixError`` for real failures; when ``PosixError/isResourceExhaustion`` is set
    /// (`EMFILE`, `ENFILE`, ...) the caller must back off: the connection stays queued and the
    /// listener stays readable, so retrying at once would spin.
    func accept() throws -> AcceptedSocket?
    /// Stops listening and releases the descriptor.
    func close()
}

/// Shared `accept4` logic for TCP and Unix listeners.
enum ListenerSupport {
    /// Errors that, per accept(2), are pending network errors of the new connection:
    /// "Linux accept() passes already-pending network errors on the new socket as an error
    /// code from accept() [...] For reliable operation the application should detect the
    /// network errors defined for the protocol after accept() and treat them like EAGAIN by
    /// retrying."
    static let retryable: Set<Int32> = [
        ECONNABORTED, EPROTO, ENETDOWN, ENOPROTOOPT, EHOSTDOWN, ENONET, EHOSTUNREACH,
        EOPNOTSUPP, ENETUNREACH,
    ]

    static func accept(_ listener: Socket) throws -> AcceptedSocket? {
        let fd = listener.descriptor
        precondition(fd >= 0, "accept on a closed listener")
        let flags = Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        while true {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let result: IOResult<Int32>
            do {
                result = try withUnsafeMutablePointer(to: &storage) { pointer in
                    try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                        try Syscall.nonBlocking("accept4") { CLinux_accept4(fd, address, &length, flags) }
                    }
                }
            } catch let error as PosixError where retryable.contains(error.errno) {
                continue
            }
            guard case .value(let accepted) = result else {
                return nil
            }
            let peer = withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    SocketAddress($0, length: length).description
                }
            }
            return AcceptedSocket(socket: Socket(adopting: accepted, remoteAddress: peer), peerAddress: peer)
        }
    }
}
