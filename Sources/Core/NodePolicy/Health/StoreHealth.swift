/// Whether the node's store takes commits, as its one writer saw them: healthy until a commit
/// fails, failing from then until one succeeds. A failing store makes `ready.store` `failed` and
/// `ordersync check` CRITICAL at once (Docs/OPERATIONS.md, "Monitoring"), naming the problem
/// (disk full, read-only, ...) and the file, however long ago the last read succeeded.
public struct StoreHealth: Sendable, Equatable {
    private enum State: Equatable {
        /// The last commit succeeded (or none ran yet).
        case healthy
        /// The last commit failed, and so did every one since the first of the streak.
        case failing(StoreFailure)
    }

    private var state = State.healthy

    /// A healthy store.
    public init() {}

    /// The streak of failed commits, nil while the last commit succeeded.
    public var failure: StoreFailure? {
        if case .failing(let f) = state { return f }
        return nil
    }

    /// A commit reached the disk: the store is healthy again.
    public mutating func committed() {
        state = .healthy
    }

    /// A commit failed with `problem` (`disk full`, `read-only`, ...) and the store's own
    /// `error`, about the file at `path`, at `atMillis` (wall clock).
    public mutating func failed(problem: String, error: String, path: String?, atMillis: Int64) {
        switch state {
        case .healthy:
            state = .failing(
                StoreFailure(problem: problem, error: error, path: path, failures: 1, sinceMillis: atMillis, lastMillis: atMillis))
        case .failing(var f):
            f.problem = problem
            f.error = error
            f.path = path ?? f.path
            f.failures += 1
            f.lastMillis = atMillis
            state = .failing(f)
        }
    }
}

/// A streak of failed commits (`ready.storeFailure` in `GET /v1/status`).
public struct StoreFailure: Sendable, Equatable {
    /// What went wrong, in a few words: `disk full`, `read-only`, `busy`, `damaged`,
    /// `commit failed`.
    public var problem: String
    /// The store's own message for the last failure.
    public var error: String
    /// The database file.
    public var path: String?
    /// Commits failed in a row.
    public var failures: Int64
    /// When the first of them failed (wall-clock milliseconds since 1970).
    public var sinceMillis: Int64
    /// When the last of them failed.
    public var lastMillis: Int64

    /// A failure from its members.
    public init(problem: String, error: String, path: String?, failures: Int64, sinceMillis: Int64, lastMillis: Int64) {
        self.problem = problem
        self.error = error
        self.path = path
        self.failures = failures
        self.sinceMillis = sinceMillis
        self.lastMillis = lastMillis
    }

    /// One line for the check and the status text: `disk full (/var/lib/ordersync/ordersync.sqlite),
    /// 3 commits failed since 2026-11-27T19:03:07.120Z`.
    public var summary: String {
        let file = path.map { " (\($0))" } ?? ""
        let count = failures == 1 ? "1 commit failed" : "\(failures) commits failed"
        return "\(problem)\(file), \(count) since \(NodeError.isoTime(epochMillis: sinceMillis))"
    }
}
