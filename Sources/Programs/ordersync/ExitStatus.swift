import ArgumentParser
import Foundation
import OrderStore
import OrderSyncNode

/// The exit codes of every `ordersync` command but `check` (which exits 0-3 like a monitoring
/// plugin): the numbers of BSD's sysexits.h, so that a script can tell "not found" from
/// "daemon down" from "disk failure". Docs/OPERATIONS.md, "Exit codes", lists them.
enum ExitStatus: Int32, CaseIterable {
    /// Done.
    case ok = 0
    /// A daemon could not start (a reason without a code of its own).
    case failure = 1
    /// Bad command line: unknown option, missing or invalid value (ArgumentParser's own code).
    case usage = 64
    /// The input data was refused: an invalid order field, UUID or message, or too large; a
    /// daemon's data directory holds another store, or one of its files is damaged.
    case dataError = 65
    /// No such order or terminal, or no data directory or store where one was named.
    case notFound = 66
    /// No daemon listens on the data directory's socket; a daemon's listen address cannot be
    /// used (not on this host, yet).
    case unavailable = 69
    /// The daemon failed unexpectedly (an internal error).
    case software = 70
    /// Refused: a version conflict, an order that exists, a change the lifecycle does not
    /// allow, the wrong kind of node (a slave asked for the journal or pairing), a store written
    /// by a newer build.
    case refused = 73
    /// The store failed: it could not be read or written (damaged, disk full, I/O error).
    case storageFailure = 74
    /// Try again later: the daemon is starting, busy, rate-limited or did not answer in time; a
    /// daemon's port or data directory is still held by another process.
    case tryAgain = 75
    /// The daemon's answer made no sense to this client (another version?).
    case protocolError = 76
    /// Permission denied on the socket, the database or the data directory.
    case permissionDenied = 77
    /// A daemon is not configured to start: a slave neither paired nor given a pairing code.
    case config = 78

    /// The value ArgumentParser exits with.
    var exitCode: ExitCode { ExitCode(rawValue) }

    /// The exit status for an error code of the local API (`{"error":{"code":…}}`, or a code
    /// in a `POST /v1/operations` answer), given the HTTP status it came with.
    static func forAPIError(code: String, httpStatus: Int) -> ExitStatus {
        switch code {
        case "not_found": return .notFound
        case "conflict", "already_exists", "invalid_transition", "removed", "wrong_store", "ambiguous", "not_master", "no_journal":
            return .refused
        case "storage_failed", "key_rotation_failed": return .storageFailure
        case "rate_limited", "starting", "request_timeout": return .tryAgain
        case "no_route", "method_not_allowed": return .protocolError
        default: break
        }
        switch httpStatus {
        case 400, 413: return .dataError
        case 404, 410: return .notFound
        case 401, 403: return .permissionDenied
        case 408, 429, 503: return .tryAgain
        case 409, 422: return .refused
        case 500..<600: return .software
        default: return .protocolError
        }
    }

    /// The exit status for a client-side failure.
    static func forClientError(_ error: LocalAPIClientError) -> ExitStatus {
        switch error {
        case .noDaemon: return .unavailable
        case .noStore, .noDataDirectory: return .notFound
        case .permissionDenied: return .permissionDenied
        case .timeout: return .tryAgain
        case .badResponse: return .protocolError
        case .refused: return .refused
        case .apiError(let status, let code, _): return forAPIError(code: code, httpStatus: status)
        }
    }

    /// The exit status of a node that could not start, or of a backup that could not be made
    /// (Docs/OPERATIONS.md, "Start-up refusals").
    init(_ failure: StartupFailure) {
        switch failure {
        case .general: self = .failure
        case .settings: self = .usage
        case .notFound: self = .notFound
        case .refused: self = .refused
        case .storage: self = .storageFailure
        case .storeMismatch, .damagedFile: self = .dataError
        case .permission: self = .permissionDenied
        case .lockHeld, .portInUse: self = .tryAgain
        case .listenFailed: self = .unavailable
        case .notPaired: self = .config
        }
    }

    /// The exit status for a failure of the read-only fallback's store.
    static func forStoreError(_ error: StoreError) -> ExitStatus {
        switch error.kind {
        case .missingDatabase, .notFound: return .notFound
        case .busy: return .tryAgain
        case .schemaTooNew: return .refused
        case .invalidArgument: return .usage
        default: return .storageFailure
        }
    }
}

/// Prints `ordersync: MESSAGE` on stderr and exits with `status`.
func fail(_ message: String, _ status: ExitStatus) -> ExitCode {
    FileHandle.standardError.write(Data("ordersync: \(message)\n".utf8))
    return status.exitCode
}

/// Runs a CLI body, turning the client's and the store's errors into a message and their exit
/// status.
func reportingFailures<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let e as LocalAPIClientError {
        throw fail(e.description, ExitStatus.forClientError(e))
    } catch let e as StoreError {
        throw fail(e.description, ExitStatus.forStoreError(e))
    }
}
