import Glibc

/// Process-wide signal setup for a daemon whose event loop receives signals via `signalfd`.
public enum Signals {
    /// Blocks `signals` in the calling thread; threads created afterwards inherit the mask.
    ///
    /// Call it first thing in `main`, before any thread exists, so that no thread can take the
    /// signal with its default action; then receive them with ``EventLoop/onSignal(_:_:)``.
    public static func block(_ signals: [Int32]) throws {
        var mask = set(signals)
        let result = pthread_sigmask(SIG_BLOCK, &mask, nil)
        if result != 0 {
            throw PosixError(call: "pthread_sigmask", errno: result)
        }
    }

    /// Unblocks `signals` in the calling thread.
    public static func unblock(_ signals: [Int32]) throws {
        var mask = set(signals)
        let result = pthread_sigmask(SIG_UNBLOCK, &mask, nil)
        if result != 0 {
            throw PosixError(call: "pthread_sigmask", errno: result)
        }
    }

    /// Ignores `SIGPIPE`, so writing to a closed socket or pipe returns `EPIPE` instead of
    /// killing the process (sockets here also send with `MSG_NOSIGNAL`).
    public static func ignoreBrokenPipe() {
        signal(SIGPIPE, SIG_IGN)
    }

    static func set(_ signals: [Int32]) -> sigset_t {
        var mask = sigset_t()
        sigemptyset(&mask)
        for number in signals {
            sigaddset(&mask, number)
        }
        return mask
    }
}
