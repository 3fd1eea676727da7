import JSON

/// Journal retention for a roll-up on this terminal (Docs/OPERATIONS.md, "Roll-up into head
/// office"): compaction keeps what head office does not hold yet, within
/// `RollupFacts.keepMost`.
extension MasterNode {
    /// Head office's checkpoint as the roll-up of this data directory last wrote it to
    /// `rollup.state.json`, when it is this store's and lineage's; nil when no roll-up ran here
    /// (a small file, read before each maintenance).
    func rollupCheckpoint() -> Int64? {
        guard let state = try? RollupStatus.read(dataDirectory: dataDirectory.path),
            state["storeId"]?.stringValue == storeId, state["lineage"]?.stringValue == engine.epoch
        else { return nil }
        return state["checkpoint"]?.objectValue?["seq"]?.intValue
    }
}
