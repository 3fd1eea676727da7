/// What the local copy can ship after head office's checkpoint: only entries at or below the
/// store's stable seq (what a majority of its voters hold: no promotion can undo them), and
/// never past a hole in the local journal (the roll-up never skips silently).
public enum RollupRange: Equatable, Sendable {
    /// Ship `first...last` next (in batches).
    case ship(first: Int64, last: Int64)
    /// Nothing to ship: head office holds everything stable this copy has.
    case caughtUp
    /// Head office's checkpoint is below the oldest entry the local journal keeps: entries
    /// `first...last` are gone from this copy (compacted, or before a standby's snapshot).
    case gap(first: Int64, last: Int64)

    /// The decision for a checkpoint at `checkpoint`, a local journal holding
    /// `oldest...newest` (nil `oldest`: it holds none, and `newest` is its floor: a standby's
    /// snapshot or a compacted journal) and the stable seq `stable`. A gap is decided before the
    /// stable seq: the entries below what this copy keeps are missing whatever is stable (a
    /// standby that has not yet heard a stable seq, 0, still reports the entries its snapshot
    /// skipped instead of reading as caught up).
    public static func decide(checkpoint: Int64, oldest: Int64?, newest: Int64, stable: Int64) -> RollupRange {
        let first = checkpoint + 1
        let kept = oldest ?? (newest + 1)
        if kept > first { return .gap(first: first, last: kept - 1) }
        let last = min(stable, newest)
        guard last > checkpoint else { return .caughtUp }
        return .ship(first: first, last: last)
    }
}
