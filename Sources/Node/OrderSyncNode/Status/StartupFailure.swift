import EventLoopIO
import Glibc

/// The kinds of start-up failure a script (and systemd) must tell apart: each is a log event
/// (`start.…`) with its own exit status (the CLI's `ExitStatus`), and says whether starting
/// again can mend it (the units' `RestartPreventExitStatus=` lists those it cannot).
/// Docs/OPERATIONS.md, "Start-up refusals", is the table.
public enum StartupFailure: Sendable, Equatable, CaseIterable {
    /// Any other refusal (an I/O error without a kind of its own).
    case general
    /// A setting is wrong: a bad value on the command line or in the settings file, an unreadable
    /// settings file or pairing-code file.
    case settings
    /// Something named on the command line does not exist (the parent of `--data-dir`).
    case notFound
    /// Refused as it is: a store written by a newer build, a backup file that exists.
    case refused
    /// The order store cannot be used: damaged or unreadable.
    case storage
    /// The data directory holds another store than `--store` names.
    case storeMismatch
    /// A file of the node is damaged: the node key, the master trust file, the dashboard's
    /// certificate.
    case damagedFile
    /// Permission denied: the data directory is another user's, writable by others, or not
    /// writable; a port below 1024.
    case permission
    /// Another ordersync daemon holds the data directory's lock.
    case lockHeld
    /// A port the node listens on is in use (another program, or a daemon still stopping).
    case portInUse
    /// An address the node listens on cannot be used here (not on this host, or not yet: the
    /// network is still coming up).
    case listenFailed
    /// A slave neither paired nor given a pairing code.
    case notPaired

    /// The log event that reports it (`start.port_in_use`): level error, priority 3.
    public var event: String {
        switch self {
        case .general: return "start.failed"
        case .settings: return "start.bad_settings"
        case .notFound: return "start.data_dir_missing"
        case .refused: return "start.store_too_new"
        case .storage: return "start.store_unusable"
        case .storeMismatch: return "start.store_mismatch"
        case .damagedFile: return "start.file_damaged"
        case .permission: return "start.permission_denied"
        case .lockHeld: return "start.lock_held"
        case .portInUse: return "start.port_in_use"
        case .listenFailed: return "start.listen_failed"
        case .notPaired: return "start.not_paired"
        }
    }

    /// Whether starting again, unchanged, can succeed (a daemon still stopping frees its port
    /// and its lock); false where an operator must act first.
    public var restartMends: Bool {
        switch self {
        case .lockHeld, .portInUse, .listenFailed, .general: return true
        default: return false
        }
    }

    /// The fix in one line, when the error's message does not carry a more precise one.
    public var fix: String {
        switch self {
        case .general: return "read the error; start again once it is mended"
        case .settings: return "correct the setting named (see `ordersync master --help` or `ordersync slave --help`)"
        case .notFound: return "check --data-dir for a typo, or create its parent directory"
        case .refused: return "run the newer build that wrote the store, or restore a backup made by this one"
        case .storage: return "restore the store from a backup (Docs/OPERATIONS.md, \"Backup and restore\")"
        case .storeMismatch: return "use the data directory of that store, or drop --store"
        case .damagedFile: return "restore the file from a backup, or remove it to make a new one (a new key means pairing again)"
        case .permission: return "run the node as the data directory's owner and `chmod 700` the directory"
        case .lockHeld: return "stop the other ordersync on this data directory, or choose another --data-dir"
        case .portInUse: return "stop the other program on the port, or choose --port (0 picks a free one)"
        case .listenFailed: return "choose an address this host has (--listen, --metrics-listen, --http-listen)"
        case .notPaired: return "run `ordersync pair` on the master, then start with --pair CODE (or --pair-file, ORDERSYNC_PAIR_CODE)"
        }
    }
}

extension StartupFailure {
    /// The kind of a failed system call's `errno`: permission for `EACCES`, `EPERM` and `EROFS`,
    /// a port in use for `EADDRINUSE`, `otherwise` for the rest.
    public static func of(errno code: Int32, otherwise: StartupFailure = .general) -> StartupFailure {
        switch code {
        case EACCES, EPERM, EROFS: return .permission
        case EADDRINUSE: return .portInUse
        default: return otherwise
        }
    }

    /// The kind of a failed listen (`bind` on a TCP port or the local API's socket path).
    public static func ofListen(_ error: any Error) -> StartupFailure {
        guard let code = (error as? PosixError)?.errno else { return .listenFailed }
        return of(errno: code, otherwise: .listenFailed)
    }
}
