import OrderStore

/// The log's checkpoints a `StoreWriter` ran on its commit thread (`WALCheckpointer`), for
/// tests and measurements: how many, how many failed, and the last one's outcome. A failed
/// checkpoint loses nothing (every page stays in the synced log); the next group that finds
/// the log past the threshold queues another.
struct CheckpointCount {
    private(set) var runs = 0
    private(set) var failures = 0
    private(set) var last: Result<WALCheckpointer.Outcome, StoreError>?
    /// The times the log was emptied after a complete checkpoint (`WALCheckpointer.truncateLog`),
    /// and the truncations that failed (the log then stays as it was, every page in it synced).
    private(set) var truncations = 0
    private(set) var truncationFailures = 0

    /// No checkpoint ran yet, or the last one copied the whole log into the database file.
    var lastCopiedAll: Bool {
        guard let last else { return true }
        guard case .success(let done) = last else { return false }
        return done.checkpointedPages == done.logPages
    }

    mutating func note(_ outcome: Result<WALCheckpointer.Outcome, StoreError>) {
        runs += 1
        if case .failure = outcome { failures += 1 }
        last = outcome
    }

    /// The truncations in a row that found a group or a reader in the way (`.busy`).
    private(set) var busyTruncations = 0

    mutating func noteTruncation(_ outcome: Result<WALCheckpointer.Truncation, StoreError>) {
        switch outcome {
        case .success(.busy): busyTruncations += 1
        case .success(let done):
            busyTruncations = 0
            if done == .truncated { truncations += 1 }
        case .failure: truncationFailures += 1
        }
    }
}
