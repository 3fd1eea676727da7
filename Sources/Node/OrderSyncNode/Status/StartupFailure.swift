/// The kinds of start-up failure a script must tell apart (each has its own exit status).
public enum StartupFailure: Sendable, Equatable {
    /// Any other refusal (a bad setting, a held lock, a port in use, ...).
    case general
    /// Something named on the command line does not exist (the parent of `--data-dir`).
    case notFound
    /// Refused as it is: a store written by a newer build, a backup file that exists.
    case refused
    /// The order store cannot be used: damaged or unreadable.
    case storage
}
