internal import CLinux
import Glibc

/// A resolved socket address (IPv4, IPv6 or Unix), stored as raw `sockaddr_storage` bytes.
struct SocketAddress {
    var storage: sockaddr_storage
    var length: socklen_t

    var family: Int32 { Int32(storage.ss_family) }

    /// Builds an address from the first `length` bytes of a `sockaddr`.
    init(_ address: UnsafePointer<sockaddr>, length: socklen_t) {
        var storage = sockaddr_storage()
        let size = min(Int(length), MemoryLayout<sockaddr_storage>.size)
        withUnsafeMutableBytes(of: &storage) { target in
            target.copyMemory(from: UnsafeRawBufferPointer(start: address, count: size))
        }
        self.storage = storage
        self.length = socklen_t(size)
    }

    /// A Unix domain socket address for `path`.
    init(unixPath path: String) throws {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard !bytes.isEmpty, bytes.count < capacity, !bytes.contains(0) else {
            throw PosixError(
                call: "bind", errno: ENAMETOOLONG,
                detail: "unix socket path must be 1...\(capacity - 1) bytes: \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)! + bytes.count + 1)
        self = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                SocketAddress($0, length: length)
            }
        }
    }

    /// Calls `body` with a `sockaddr` pointer and length suitable for `bind`/`connect`.
    func withSockAddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws -> R) rethrows -> R {
        var copy = storage
        return try withUnsafePointer(to: &copy) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                try body($0, length)
            }
        }
    }

    /// The port of an IP address, 0 for other families.
    var port: UInt16 {
        var copy = storage
        switch family {
        case AF_INET:
            return withUnsafePointer(to: &copy) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
            }
        case AF_INET6:
            return withUnsafePointer(to: &copy) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
            }
        default:
            return 0
        }
    }

    /// The numeric host part: `127.0.0.1`, `::1`, or the path of a Unix socket.
    var host: String {
        var copy = storage
        switch family {
        case AF_INET:
            return withUnsafePointer(to: &copy) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer -> String in
                    var address = pointer.pointee.sin_addr
                    return SocketAddress.presentation(AF_INET, &address)
                }
            }
        case AF_INET6:
            return withUnsafePointer(to: &copy) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer -> String in
                    var address = pointer.pointee.sin6_addr
                    return SocketAddress.presentation(AF_INET6, &address)
                }
            }
        case AF_UNIX:
            return withUnsafePointer(to: &copy) {
                $0.withMemoryRebound(to: sockaddr_un.self, capacity: 1) { pointer -> String in
                    var path = pointer.pointee.sun_path
                    let offset = MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)!
                    let count = max(0, min(Int(length) - offset, MemoryLayout.size(ofValue: path)))
                    return withUnsafeBytes(of: &path) { raw in
                        let bytes = raw.prefix(count).prefix { $0 != 0 }
                        return bytes.isEmpty ? "unix" : String(decoding: bytes, as: UTF8.self)
                    }
                }
            }
        default:
            return "unknown"
        }
    }

    /// `ip:port` for IPv4, `[ip]:port` for IPv6, the path for Unix sockets.
    var description: String {
        switch family {
        case AF_INET: return "\(host):\(port)"
        case AF_INET6: return "[\(host)]:\(port)"
        default: return host
        }
    }

    private static func presentation(_ family: Int32, _ address: UnsafeRawPointer) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        guard inet_ntop(family, address, &buffer, socklen_t(buffer.count)) != nil else {
            return "invalid"
        }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    /// Resolves `host` and `port` with `getaddrinfo` for a TCP stream socket.
    ///
    /// IPv4 results come first: on a store LAN the master is usually reached over IPv4, and
    /// `localhost` must not fail just because a server listens on `0.0.0.0` only.
    static func resolve(host: String, port: UInt16, passive: Bool) throws -> [SocketAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_protocol = Int32(IPPROTO_TCP)
        hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host.isEmpty ? nil : host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            if status == EAI_SYSTEM {
                throw PosixError(call: "getaddrinfo(\(host))", errno: Glibc.errno)
            }
            let message = String(cString: gai_strerror(status))
            throw PosixError(call: "getaddrinfo(\(host))", errno: 0, detail: message)
        }
        defer { freeaddrinfo(list) }
        var result: [SocketAddress] = []
        var node: UnsafeMutablePointer<addrinfo>? = first
        while let entry = node {
            if let address = entry.pointee.ai_addr {
                result.append(SocketAddress(address, length: entry.pointee.ai_addrlen))
            }
            node = entry.pointee.ai_next
        }
        let v4 = result.filter { $0.family == AF_INET }
        let others = result.filter { $0.family != AF_INET }
        return v4 + others
    }
}
