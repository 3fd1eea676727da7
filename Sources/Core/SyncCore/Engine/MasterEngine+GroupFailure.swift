extension MasterEngine {
    /// The group's commit failed with `error` (the store's typed error, e.g. a full disk): as
    /// `groupFailed(_:now:)`, its description becoming the text the senders are refused with.
    /// SyncCore knows no store, so any error type the shell's store throws is taken.
    public func groupFailed(_ error: some Error, now: Int64) -> [Action] {
        groupFailed("\(error)", now: now)
    }
}
