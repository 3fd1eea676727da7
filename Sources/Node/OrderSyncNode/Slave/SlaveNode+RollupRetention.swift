/// Journal retention for a roll-up on a standby (Docs/OPERATIONS.md, "Roll-up into head
/// office"): the standby's compaction keeps what head office does not hold yet, as a master's
/// does (`MasterNode.rollupCheckpoint()`), within the same cap.
extension SlaveNode {
    /// Head office's checkpoint from `rollup.state.json` in `dataDirectory`, when the file names
    /// `store` and `lineage` (the copy's `replica.store` and `replica.epoch`, which the store asks
    /// with when it bounds the copy's journal, on the writer's thread).
    static func standbyRollupCheckpoint(dataDirectory: String) -> (_ store: String, _ lineage: String) -> Int64? {
        { store, lineage in
            guard let state = try? RollupStatus.read(dataDirectory: dataDirectory),
                state["storeId"]?.stringValue == store, state["lineage"]?.stringValue == lineage
            else { return nil }
            return state["checkpoint"]?.objectValue?["seq"]?.intValue
        }
    }
}
