/// What the node tells a master engine for head office's roll-up (Docs/OPERATIONS.md, "Roll-up
/// into head office"; Docs/PROTOCOL.md 7.18).
public struct RollupFacts: Sendable, Equatable {
    /// The store's stable seq as the node computed it (`StableSeq`): sent to OrderSync standbys
    /// on heartbeats (`stableSeq`) when above 0.
    public var stableSeq: Int64 = 0
    /// Head office's checkpoint as a roll-up on this terminal last wrote it
    /// (`DATADIR/rollup.state.json`), nil when none runs here: compaction keeps the entries
    /// after it, so the roll-up never comes back to a gap, unless that keeps more than `keepMost`.
    public var shippedSeq: Int64?
    /// The most entries kept for a roll-up that lags (about 600 MB of journal).
    public var keepMost: Int64 = 1_000_000

    /// No roll-up known.
    public init() {}

    /// The highest seq compaction may remove, given the one it would remove without a roll-up
    /// (`through`) and the journal's last seq.
    public func compactionLimit(_ through: Int64, lastSeq: Int64) -> Int64 {
        guard let shippedSeq else { return through }
        return min(through, max(shippedSeq, lastSeq - keepMost))
    }
}
