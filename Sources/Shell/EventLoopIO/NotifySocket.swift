internal import CLinux
import Glibc

/// A Unix domain datagram socket that sends to one address: the service manager's notification
/// socket (`NOTIFY_SOCKET`, sd_notify(3)). Blocking sends of a few bytes each; the service
/// manager reads them at once, and a full queue is reported (`EAGAIN`) rather than waited for.
public final class NotifySocket {
    private var descriptor: Int32
    private let address: SocketAddress
    /// The address as given: a path, or `@name` for the abstract namespace.
    public let path: String

    /// A socket that sends to `path`: a file system path, or `@name` for a name in the abstract
    /// namespace (unix(7): "an abstract socket address is distinguished ... by the fact that
    /// sun_path[0] is a null byte").
    public init(path: String) throws {
        address = try SocketAddress(notifyPath: path)
        self.path = path
        let type = Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        descriptor = try Syscall.call("socket") { socket(AF_UNIX, type, 0) }
    }

    deinit {
        close()
    }

    /// Sends one datagram; throws the `sendto` error (for example `ECONNREFUSED` when nobody
    /// listens, `EAGAIN` when the receiver's queue is full).
    public func send(_ text: String) throws {
        precondition(descriptor >= 0, "use of a closed notify socket")
        let bytes = Array(text.utf8)
        let fd = descriptor
        _ = try address.withSockAddr { pointer, length in
            try bytes.withUnsafeBytes { raw in
                try Syscall.call("sendto") { Glibc.sendto(fd, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL), pointer, length) }
            }
        }
    }

    /// Closes the socket; further sends trap.
    public func close() {
        guard descriptor >= 0 else { return }
        Syscall.close(descriptor)
        descriptor = -1
    }
}

extension SocketAddress {
    /// A Unix domain address for `NOTIFY_SOCKET`: a path, or `@name` in the abstract namespace.
    init(notifyPath path: String) throws {
        guard path.hasPrefix("@") else {
            try self.init(unixPath: path)
            return
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let name = Array(path.utf8.dropFirst())
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard !name.isEmpty, name.count < capacity else {
            throw PosixError(
                call: "sendto", errno: ENAMETOOLONG,
                detail: "abstract socket name must be 1...\(capacity - 1) bytes: \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw[0] = 0
            UnsafeMutableRawBufferPointer(rebasing: raw[1...]).copyBytes(from: name)
        }
        // No terminating null byte: every byte of the length is part of an abstract name.
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)! + 1 + name.count)
        self = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                SocketAddress($0, length: length)
            }
        }
    }
}
