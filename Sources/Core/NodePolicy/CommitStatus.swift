// The commit counters of `GET /v1/status` (`commits`): the master's group commits and a
// slave's replica batches.

/// How group commits went, for `GET /v1/status` (`commits`).
public struct CommitStatus: Equatable, Sendable {
    /// Groups committed (or failed).
    public var groups: Int64 = 0
    /// Messages and local writes applied in them.
    public var messages: Int64 = 0
    /// Operations applied in them.
    public var operations: Int64 = 0
    /// The most messages in one group.
    public var largestGroup: Int64 = 0
    /// Groups whose commit failed.
    public var failed: Int64 = 0
    /// From the group's start to its commit on disk, for the last group (microseconds).
    public var lastCommitMicros: Int64 = 0

    public init() {}

    /// Counts one group of `messages` with `operations`, committed (or `failed`) `micros` after it
    /// started.
    public mutating func record(messages: Int, operations: Int, micros: Int64, failed: Bool) {
        groups += 1
        self.messages += Int64(messages)
        self.operations += Int64(operations)
        largestGroup = max(largestGroup, Int64(messages))
        if failed { self.failed += 1 }
        lastCommitMicros = micros
    }
}

/// How the replica's batches went, for `GET /v1/status` (`commits`).
public struct ReplicaCommitStatus: Equatable, Sendable {
    /// Transactions committed (or failed) for the master's messages.
    public var batches: Int64 = 0
    /// The master's messages applied in them.
    public var messages: Int64 = 0
    /// The most messages in one batch.
    public var largestBatch: Int64 = 0
    /// Batches whose commit failed.
    public var failed: Int64 = 0

    public init() {}
}
