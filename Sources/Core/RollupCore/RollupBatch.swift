/// How many entries go into one PostgreSQL transaction: at most `maxEntries` and at most
/// `maxBytes` of entries (`RollupEntry.byteCount`), but always at least one, so that an entry
/// larger than the byte limit still ships, alone.
public struct RollupBatchLimits: Equatable, Sendable {
    /// Most entries per batch (500).
    public var maxEntries: Int
    /// Most bytes per batch (1 MiB).
    public var maxBytes: Int

    /// The limits; the defaults are 500 entries and 1 MiB.
    public init(maxEntries: Int = 500, maxBytes: Int = 1 << 20) {
        precondition(maxEntries > 0 && maxBytes > 0, "batch limits must be positive")
        self.maxEntries = maxEntries
        self.maxBytes = maxBytes
    }

    /// How many of the entries of sizes `sizes` (in seq order) make the next batch: 0 only
    /// when there are none.
    public func count(sizes: [Int]) -> Int {
        var bytes = 0
        var n = 0
        for size in sizes {
            if n == maxEntries { break }
            if n > 0 && bytes + size > maxBytes { break }
            bytes += size
            n += 1
        }
        return n
    }
}

/// One batch ready to ship: its entries with their hashes and rolling hashes, chained from the
/// checkpoint's rolling hash.
public struct RollupBatch: Equatable, Sendable {
    /// One entry and its hashes.
    public struct Row: Equatable, Sendable {
        public var entry: RollupEntry
        public var hash: [UInt8]
        public var rolling: [UInt8]
    }

    /// The rows, in seq order, without gaps.
    public var rows: [Row]
    /// The bytes of the entries (`byteCount`).
    public var bytes: Int

    /// The batch of `entries` (consecutive, starting right after the checkpoint at `after`
    /// whose rolling hash is `rolling`); nil when they do not follow on from it without a gap.
    public init?(entries: [RollupEntry], after: Int64, rolling: [UInt8]) {
        var previous = rolling
        var expected = after + 1
        var rows: [Row] = []
        var bytes = 0
        for e in entries {
            guard e.seq == expected else { return nil }
            let hash = RollupHash.entry(e)
            previous = RollupHash.rolling(previous: previous, hash: hash)
            rows.append(Row(entry: e, hash: hash, rolling: previous))
            bytes += e.byteCount
            expected += 1
        }
        self.rows = rows
        self.bytes = bytes
    }

    /// The first and last seq (the batch is never empty when shipped).
    public var firstSeq: Int64 { rows.first?.entry.seq ?? 0 }
    public var lastSeq: Int64 { rows.last?.entry.seq ?? 0 }
    /// The rolling hash at `lastSeq`: the checkpoint's after this batch.
    public var lastRolling: [UInt8] { rows.last?.rolling ?? [] }
}
