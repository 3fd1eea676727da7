/// What one terminal may make the master do beyond its operations per second (`RateLimit`):
/// bytes per second, snapshots, and bytes added to the journal per hour; with the buckets that
/// enforce them, by `MasterEngine.bucketKey(for:)`, and the summary of the refusals' log lines.
/// See `MasterEngine+RateLimit.swift`.
public struct TerminalLimits: Sendable {
    /// Bytes of operation messages a terminal may send: 1 MiB/s sustained, 4 MiB at once (more
    /// than the largest message a link carries, 1 MiB). A till sends a few KB a second.
    public var bytes = Allowance(perSecond: 1_048_576, capacity: 4_194_304)
    /// Snapshots an OrderSync slave may get: 4 at once, then one every 15 s. A slave needs one
    /// when it joins or fell far behind; catch-ups (a reconnect) are not counted.
    public var snapshots = Allowance(perSecond: 1.0 / 15, capacity: 4)
    /// Bytes a terminal's operations may add to the journal per hour (the broadcasts recorded,
    /// which every node stores): 128 MiB. The budget is a bucket of that size refilled over an
    /// hour, so in any span of `t` hours at most `budget * (1 + t)` plus one operation.
    public var journalBytesPerHour: Double = 134_217_728

    /// The journal budget as a bucket.
    public var journal: Allowance { Allowance(perSecond: journalBytesPerHour / 3600, capacity: journalBytesPerHour) }

    /// The terminals' byte buckets.
    var byteBuckets: [String: TokenBucket] = [:]
    /// The terminals' snapshot buckets.
    var snapshotBuckets: [String: TokenBucket] = [:]
    /// The terminals' journal budgets (created at their first applied operation).
    var journalBuckets: [String: TokenBucket] = [:]
    /// Terminals whose budget ran out and is not full again: the operator was warned once.
    var overBudget: Set<String> = []
    /// Why each throttled link is refused, by peer id (the text of the answers until its hint).
    var throttleReasons: [Int: String] = [:]
    /// Links whose hello was refused (snapshot limit): closing, nothing more is read from them.
    var refusedHellos: Set<Int> = []
    /// The log lines of refusals, summarised per source and minute.
    public var summary = RefusalLogSummary()

    /// The defaults.
    public init() {}

    /// Forgets the buckets that are full at `now` (a new one would be the same) and the
    /// reasons of links that are gone; an over-budget episode ends when its budget is full.
    mutating func forgetFull(now: Int64, livePeers: Set<Int>) {
        byteBuckets = byteBuckets.filter { !$0.value.isFull(now: now) }
        snapshotBuckets = snapshotBuckets.filter { !$0.value.isFull(now: now) }
        journalBuckets = journalBuckets.filter { !$0.value.isFull(now: now) }
        overBudget = overBudget.filter { journalBuckets[$0] != nil }
        throttleReasons = throttleReasons.filter { livePeers.contains($0.key) }
        refusedHellos = refusedHellos.filter { livePeers.contains($0) }
    }
}
