import OrderStore
import SyncCore

/// The store's stable seq on the master (Docs/PROTOCOL.md 7.18): the highest seq a majority of
/// the store's voters (the master included) hold, from the voting standbys' `held`.
extension MasterNode {
    /// In the open group: computes the stable seq from what the connected voting standbys said
    /// they hold (a voter not connected holds nothing as far as the master knows) and, when it
    /// rose above the value on disk (`engine.rollup.stableSeq`, read once at start), writes
    /// `sync.stable_seq` in the group's transaction (with the entries it may cover: never on
    /// disk before them) and gives it to the engine for the standbys' heartbeats. It never goes
    /// down. A master promoted from a standby drops in the same transaction the entries it kept
    /// through a snapshot at or below it (Docs/PROTOCOL.md 7.19).
    func noteStableSeq() {
        let voting = engine.standbys.filter(\.voter)
        let voters = engine.voters.count ?? voting.count
        let stable = StableSeq.compute(masterSeq: engine.lastSeq, voterHeld: voting.compactMap(\.held), voters: voters)
        guard stable > engine.rollup.stableSeq else { return }
        let written = writer.collect { db -> Bool in (try? db.raiseStableSeq(to: stable)) != nil }
        if written { engine.rollup.stableSeq = stable }
    }
}
