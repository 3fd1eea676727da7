import Glibc

/// The result of a call on a nonblocking descriptor: a value, or "try again when ready".
public enum IOResult<Value> {
    /// The call completed and produced this value.
    case value(Value)
    /// The call would have blocked (`EAGAIN`/`EWOULDBLOCK`); wait for readiness and retry.
    case wouldBlock
}

extension IOResult: Equatable where Value: Equatable {}

/// The single funnel every system call of this module goes through.
///
/// - `EINTR` is retried;
/// - `EAGAIN`/`EWOULDBLOCK` become ``IOResult/wouldBlock`` (or an error where blocking is not
///   expected);
/// - `EBADF` and `EFAULT` trap: they mean this program used a descriptor or buffer it does not
///   own, and continuing could corrupt another owner's descriptor;
/// - everything else is thrown as ``PosixError`` carrying the call's name and `errno`.
enum Syscall {
    /// Runs `body` (which returns -1 and sets `errno` on failure) and maps would-block to a value.
    @inline(__always)
    static func nonBlocking<T: FixedWidthInteger>(
        _ call: StaticString, _ body: () -> T
    ) throws -> IOResult<T> {
        while true {
            let result = body()
            if result != -1 {
                return .value(result)
            }
            let code = Glibc.errno
            switch code {
            case EINTR:
                continue
            case EAGAIN, EWOULDBLOCK:
                return .wouldBlock
            default:
                throw failure(call, code)
            }
        }
    }

    /// Runs `body` for a call that is not expected to block; would-block is thrown as an error.
    @inline(__always)
    static func call<T: FixedWidthInteger>(_ call: StaticString, _ body: () -> T) throws -> T {
        while true {
            let result = body()
            if result != -1 {
                return result
            }
            let code = Glibc.errno
            if code == EINTR {
                continue
            }
            throw failure(call, code)
        }
    }

    /// Maps `errno` to an error, trapping on the codes that reveal a bug of our own.
    static func failure(_ call: StaticString, _ code: Int32) -> PosixError {
        if code == EBADF || code == EFAULT {
            let error = PosixError(call: "\(call)", errno: code)
            preconditionFailure("\(error): a descriptor or buffer this program does not own")
        }
        return PosixError(call: "\(call)", errno: code)
    }

    /// Closes `descriptor` exactly once.
    ///
    /// On Linux the descriptor is released even when `close` reports `EINTR` or `EIO`, so it is
    /// never retried (a retry could close a descriptor another thread just opened).
    static func close(_ descriptor: Int32) {
        if Glibc.close(descriptor) == -1 && Glibc.errno == EBADF {
            preconditionFailure("close(\(descriptor)): EBADF, the descriptor was already closed")
        }
    }
}
