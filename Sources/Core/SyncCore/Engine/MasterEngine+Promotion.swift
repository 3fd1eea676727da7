extension MasterEngine {
    /// Entries were added to the journal outside the engine (a promotion's tail, fetched from a
    /// more advanced voter and applied by the node before it serves): the engine reads its last
    /// sequence number again.
    public func journalExtended() throws {
        lastSeq = try store.lastJournalSeq()
    }
}
