import OrderStore

/// The log's checkpoints a `StoreWriter` ran on its commit thread (`WALCheckpointer`), for
/// tests and measurements: how many, how many failed, and the last one's outcome. A failed
/// checkpoint loses nothing (every page stays in the synced log); the next group that finds
/// the log past the threshold queues another.
struct CheckpointCount {
    private(set) var runs = 0
    private(set) var failures = 0
    private(set) var last: Result<WALCheckpointer.Outcome, StoreError>?

    mutating func note(_ outcome: Result<WALCheckpointer.Outcome, StoreError>) {
        runs += 1
        if case .failure = outcome { failures += 1 }
        last = outcome
    }
}
