import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Breaks a connection's call in flight from another thread (a stop on SIGTERM): it shuts the
/// connection's socket down, so that libpq's wait for the server returns at once with an error
/// instead of waiting out a dead link (`tcp_user_timeout`, `statement_timeout`). Once
/// interrupted, every connection that attaches later is shut down as it attaches.
///
/// Not `PQcancel`: it opens a second connection to the server to ask for the cancel, and on a
/// dead link that connect hangs as the query does (libpq 15's `PQcancel` has no deadline). A
/// session that ends without `COMMIT` commits nothing: the server rolls its transaction back.
public final class PostgresInterrupt: Sendable {
    private struct State {
        var socket: Int32 = -1
        var interrupted = false
    }

    private let state = Mutex(State())

    public init() {}

    /// Shuts the attached connection's socket down (reads and writes), now and on every later
    /// attach.
    public func interrupt() {
        state.withLock { s in
            s.interrupted = true
            if s.socket >= 0 { _ = shutdown(s.socket, Int32(SHUT_RDWR)) }
        }
    }

    /// Whether `interrupt()` was called.
    public var isInterrupted: Bool { state.withLock { $0.interrupted } }

    /// The connection's socket, from its connect to its close (`detach` before `PQfinish`
    /// closes it, so that a number the kernel gives out again is never shut down).
    func attach(socket: Int32) {
        state.withLock { s in
            s.socket = socket
            if s.interrupted, socket >= 0 { _ = shutdown(socket, Int32(SHUT_RDWR)) }
        }
    }

    func detach() { state.withLock { $0.socket = -1 } }
}
