/// The operation ids a standby's snapshot covers (`AppliedIdsPart`, `Docs/PROTOCOL.md` 7.2):
/// collected as they lead the snapshot, and committed with it.
extension SlaveEngine {
    /// An `opIds` part: kept until the snapshot at its seq arrives. A part out of order drops
    /// what was collected (the snapshot is then kept without them: as before ids were sent).
    func appliedIdsReceived(_ part: AppliedIdsPart, _ out: inout [Action]) {
        var collection = appliedIds ?? AppliedIdsCollection(seq: part.seq, parts: part.parts, received: 0, ids: [:])
        guard collection.add(part) else {
            appliedIds = nil
            out.append(
                .log(
                    EngineLog(
                        .warning, "sync.ids_invalid",
                        [("seq", "\(part.seq)"), ("part", "\(part.part)"), ("parts", "\(part.parts)")])))
            return
        }
        appliedIds = collection
    }

    /// The ids collected for the snapshot at `seq` (every part of them), taken; empty when none
    /// were sent, or not all of them, or for another seq.
    func takeAppliedIds(forSnapshotAt seq: Int64) -> [String: Int64] {
        defer { appliedIds = nil }
        guard let c = appliedIds, c.seq == seq, c.isComplete else { return [:] }
        return c.ids
    }
}
