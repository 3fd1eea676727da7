import OrderStore
import SyncCore

/// The store's stable seq on a standby (Docs/PROTOCOL.md 7.18): what the master's heartbeats
/// said (`stableSeq`), kept with the replica in the batch that received it, so that a roll-up
/// on this terminal ships only what no promotion can undo.
extension SlaveNode {
    /// In the open batch: writes `sync.stable_seq` when the master said a higher one than this
    /// node kept (never lowers what is on disk).
    func keepStableSeq() {
        let said = engine.stableSeq
        guard said > keptStableSeq else { return }
        keptStableSeq = said
        writer.collect { db in
            let onDisk = Int64((try? db.metadata(StableSeq.metadataKey)) ?? nil ?? "") ?? 0
            if said > onDisk { try? db.setMetadata(StableSeq.metadataKey, String(said)) }
        }
    }
}
