internal import CLinux
import Glibc

/// Client side of a Unix domain stream socket, for command-line tools that talk to a daemon.
public enum UnixSocket {
    /// Connects to the listener at `path`, waiting for the connection.
    ///
    /// The returned socket is nonblocking; use its ``Socket/writeAll(_:timeout:)``,
    /// ``Socket/readSome(maxBytes:timeout:)`` and ``Socket/readAll(timeout:maxBytes:)``
    /// helpers, which wait with `poll`.
    /// Throws `ENOENT` when no socket file exists and `ECONNREFUSED` when nobody listens.
    public static func connectBlocking(path: String) throws -> Socket {
        let address = try SocketAddress(unixPath: path)
        let socket = try Socket.make(family: AF_UNIX, blocking: true, remoteAddress: path)
        let fd = socket.descriptor
        _ = try address.withSockAddr { pointer, length in
            try Syscall.call("connect") { Glibc.connect(fd, pointer, length) }
        }
        try socket.setNonBlocking(true)
        return socket
    }
}

extension Socket {
    /// Waits with `poll` until the socket is ready for `events` or `deadline` passes; throws
    /// `ETIMEDOUT` then.
    private func wait(for events: Int16, until deadline: MonotonicInstant) throws {
        var entry = pollfd(fd: descriptor, events: events, revents: 0)
        while true {
            let remaining = deadline - .now
            if remaining <= .zero {
                throw PosixError(call: "poll", errno: ETIMEDOUT)
            }
            let ready = try Syscall.call("poll") { poll(&entry, 1, remaining.pollTimeout) }
            if ready > 0 {
                return
            }
        }
    }

    /// Writes every byte, waiting up to `timeout` in total; throws `ETIMEDOUT` or the send
    /// error.
    public func writeAll(_ bytes: [UInt8], timeout: Duration) throws {
        let deadline = MonotonicInstant.now + timeout
        var offset = 0
        while offset < bytes.count {
            let result = try bytes.withUnsafeBytes { raw in
                try send(UnsafeRawBufferPointer(rebasing: raw[offset...]))
            }
            switch result {
            case .value(let count):
                offset += count
            case .wouldBlock:
                try wait(for: Int16(POLLOUT), until: deadline)
            }
        }
    }

    /// Reads what is available, waiting up to `timeout` for at least one byte; an empty
    /// result means the peer closed its side.
    public func readSome(maxBytes: Int = 65536, timeout: Duration) throws -> [UInt8] {
        let deadline = MonotonicInstant.now + timeout
        var buffer = [UInt8](repeating: 0, count: maxBytes)
        while true {
            let result = try buffer.withUnsafeMutableBytes { try receive(into: $0) }
            switch result {
            case .value(let count):
                buffer.removeSubrange(count...)
                return buffer
            case .wouldBlock:
                try wait(for: Int16(POLLIN), until: deadline)
            }
        }
    }

    /// Reads until the peer closes its side, waiting up to `timeout` in total; throws
    /// `EMSGSIZE` when more than `maxBytes` arrive.
    public func readAll(timeout: Duration, maxBytes: Int = 16 << 20) throws -> [UInt8] {
        let deadline = MonotonicInstant.now + timeout
        var result: [UInt8] = []
        while true {
            let remaining = max(.milliseconds(1), deadline - .now)
            let chunk = try readSome(timeout: remaining)
            if chunk.isEmpty {
                return result
            }
            result += chunk
            if result.count > maxBytes {
                throw PosixError(call: "read", errno: EMSGSIZE, detail: "more than \(maxBytes) bytes")
            }
        }
    }
}

/// Who is at the other end of a Unix domain socket, as the kernel recorded it when the
/// connection was made (`SO_PEERCRED`).
public struct PeerCredentials: Equatable, Sendable {
    /// The peer's process id.
    public var pid: Int32
    /// The peer's effective user id.
    public var uid: UInt32
    /// The peer's effective group id.
    public var gid: UInt32

    /// Credentials from their parts.
    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }
}

extension Socket {
    /// The credentials of the process that connected this Unix domain socket.
    ///
    /// unix(7): "SO_PEERCRED: Return the credentials of the peer process connected to this
    /// socket. [...] The returned credentials are those that were in effect at the time of the
    /// call to connect(2) or socketpair(2)." Throws for sockets of other families.
    public func peerCredentials() throws -> PeerCredentials {
        let fd = descriptor
        precondition(fd >= 0, "use of a closed socket")
        var pid: Int32 = 0
        var uid: UInt32 = 0
        var gid: UInt32 = 0
        _ = try Syscall.call("getsockopt(SO_PEERCRED)") { CLinux_peer_credentials(fd, &pid, &uid, &gid) }
        return PeerCredentials(pid: pid, uid: uid, gid: gid)
    }
}
