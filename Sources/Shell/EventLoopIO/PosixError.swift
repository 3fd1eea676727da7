import Glibc

/// A failed system call: the call's name and the `errno` it reported.
///
/// This is the one error type of the `Posix` module. Resolver failures from `getaddrinfo`, which
/// do not use `errno`, carry `errno == 0` and the resolver's message in `detail`.
public struct PosixError: Error, Equatable, Hashable, CustomStringConvertible, Sendable {
    /// The system call (or library function) that failed, e.g. `"connect"`.
    public let call: String
    /// The `errno` value the call reported, or 0 when `detail` explains the failure instead.
    public let errno: Int32
    /// An explanation for failures that have no `errno` (name resolution), otherwise `nil`.
    public let detail: String?

    /// Creates an error for `call` failing with `errno`.
    public init(call: String, errno: Int32, detail: String? = nil) {
        self.call = call
        self.errno = errno
        self.detail = detail
    }

    /// `true` when the process or the system ran out of file descriptors (`EMFILE`, `ENFILE`)
    /// or of socket memory (`ENOBUFS`, `ENOMEM`). A listener should stop accepting for a while
    /// instead of retrying at once: the pending connection stays queued and the retry would spin.
    public var isResourceExhaustion: Bool {
        errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM
    }

    /// The symbolic name of the error (`"ECONNREFUSED"`) when it is a common one.
    public var errnoName: String? {
        PosixError.names[errno]
    }

    /// A readable description: `connect: Connection refused (ECONNREFUSED, errno 111)`.
    public var description: String {
        if let detail {
            return "\(call): \(detail)"
        }
        let message = String(cString: strerror(errno))
        if let name = errnoName {
            return "\(call): \(message) (\(name), errno \(errno))"
        }
        return "\(call): \(message) (errno \(errno))"
    }

    private static let names: [Int32: String] = [
        EPERM: "EPERM", ENOENT: "ENOENT", EINTR: "EINTR", EIO: "EIO", EBADF: "EBADF",
        EAGAIN: "EAGAIN", ENOMEM: "ENOMEM", EACCES: "EACCES", EFAULT: "EFAULT",
        EEXIST: "EEXIST", ENOTDIR: "ENOTDIR", EINVAL: "EINVAL", ENFILE: "ENFILE",
        EMFILE: "EMFILE", ENOSPC: "ENOSPC", EPIPE: "EPIPE", ENAMETOOLONG: "ENAMETOOLONG",
        ENOTSOCK: "ENOTSOCK", EADDRINUSE: "EADDRINUSE", EADDRNOTAVAIL: "EADDRNOTAVAIL",
        ENETDOWN: "ENETDOWN", ENETUNREACH: "ENETUNREACH", ECONNABORTED: "ECONNABORTED",
        ECONNRESET: "ECONNRESET", ENOBUFS: "ENOBUFS", ENOTCONN: "ENOTCONN",
        ETIMEDOUT: "ETIMEDOUT", ECONNREFUSED: "ECONNREFUSED", EHOSTUNREACH: "EHOSTUNREACH",
        EALREADY: "EALREADY", EINPROGRESS: "EINPROGRESS", EAFNOSUPPORT: "EAFNOSUPPORT",
    ]
}
