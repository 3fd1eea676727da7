import ArgumentParser
import OrderSyncNode

/// The exit statuses of `ordersync`, one per kind of failure a script must tell apart
/// (Docs/OPERATIONS.md, "Exit status"); the numbers follow sysexits.h.
enum ExitStatus: Int32 {
    /// Any other failure.
    case failure = 1
    /// The command line is wrong (EX_USAGE).
    case usage = 64
    /// Something named on the command line does not exist (EX_NOINPUT).
    case notFound = 66
    /// The order store cannot be used: damaged, unreadable, or written by a newer build; or a
    /// backup could not be written (EX_IOERR).
    case storageFailure = 74

    /// The status as ArgumentParser's exit code.
    var exitCode: ExitCode { ExitCode(rawValue) }

    /// The status of a node that could not start.
    init(_ failure: StartupFailure) {
        switch failure {
        case .general, .conflict: self = .failure
        case .notFound: self = .notFound
        case .storage: self = .storageFailure
        }
    }
}
