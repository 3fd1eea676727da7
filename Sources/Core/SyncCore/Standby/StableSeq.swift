/// The store's stable seq (Docs/PROTOCOL.md 7.18): the highest seq a majority of the store's
/// voters, the master included, hold on disk. An election needs a majority of votes and a voter
/// promises only a candidate whose journal goes at least as far as its own (7.9), so an entry
/// a majority holds is in every journal a promotion can start from: nothing at or below the
/// stable seq is ever undone (a `--force` promotion aside). The roll-up ships only that far.
public enum StableSeq {
    /// The metadata key a master and its standbys keep it under.
    public static let metadataKey = "sync.stable_seq"

    /// The stable seq of a master at `masterSeq` whose store has `voters` voting terminals
    /// besides itself, of which the connected ones said `held` (`voterHeld`, any order; a voter
    /// not heard holds nothing as far as the master knows). With no other voter it is
    /// `masterSeq`.
    public static func compute(masterSeq: Int64, voterHeld: [Int64], voters: Int) -> Int64 {
        let members = max(voters, voterHeld.count) + 1
        let majority = members / 2 + 1
        var held = ([masterSeq] + voterHeld.map { min($0, masterSeq) }).sorted(by: >)
        while held.count < members { held.append(0) }
        return held[majority - 1]
    }
}
