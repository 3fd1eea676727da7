import JSON
import SyncCore

/// A slave's standby copy on SQLite (`Docs/PROTOCOL.md` 7.2): the master's journal entries and
/// tombstones in the same tables a master uses, written in the transaction of the `SlaveCommit`
/// that applies them.
extension OrderDatabase {
    /// The parts of `c` that come before its order changes: a snapshot empties the standby
    /// journal (`standby.base`), a divergence drops its entries after `truncateJournal`.
    func applyStandbyBefore(_ c: SlaveCommit) throws {
        if let base = c.standbyBase {
            try connection.execute("DELETE FROM journal_orders")
            try connection.execute("DELETE FROM journal")
            try setMetadata("standby.base", String(base))
            try setMetadata("standby.base_term", String(c.baseTerm ?? 1))
        }
        if let keep = c.truncateJournal {
            try connection.execute("DELETE FROM journal_orders WHERE seq > ?", [.integer(keep)])
            try connection.execute("DELETE FROM journal WHERE seq > ?", [.integer(keep)])
        }
    }

    /// The parts of `c` that come after its order changes: the journal entries (with a
    /// tombstone for each order a Remove names), the terms, the members.
    func applyStandbyAfter(_ c: SlaveCommit) throws {
        for entry in c.journal {
            try appendStandbyEntry(entry)
            if entry.operation == .remove {
                for uuid in entry.orderUUIDs { try addTombstone(uuid: uuid, seq: entry.seq) }
            }
            // The slave's housekeeping: every `standbyCompactionEvery`th entry bounds the copy.
            if entry.seq % Self.standbyCompactionEvery == 0 { try compactStandbyJournal(now: entry.recordedAtMillis) }
        }
        if let t = c.term { try setTerm(t) }
        if let s = c.termStarts { try setTermStarts(s) }
        if let m = c.members { try saveMembers(m) }
    }

    /// Records a master's entry in the standby journal (a broadcast, or a fetched tail). An
    /// operation id the journal already holds at another seq is one the master applied again: it
    /// was promoted from a snapshot, which carries no operation ids, so it could not see the
    /// first place (Docs/PROTOCOL.md 7.2). The entry is kept without its id: the first place
    /// stays the one a retry finds once this copy is promoted, and the copy goes on following
    /// its master instead of failing `UNIQUE journal.op_id` on every reconnect.
    func appendStandbyEntry(_ entry: JournalEntry) throws {
        var entry = entry
        if let id = entry.opId, let first = try journalEntry(opId: id), first.seq != entry.seq { entry.opId = nil }
        try appendJournal(entry)
    }

    /// The term of the slave's entry at `seq`: its journal's, else the last snapshot's.
    func standbyTerm(atSeq seq: Int64) throws -> Int64 {
        if let entry = try journalEntry(seq: seq) { return entry.term }
        return Int64(try metadata("standby.base_term") ?? "") ?? 1
    }

    /// How often (in entries applied) a standby bounds its journal.
    static let standbyCompactionEvery: Int64 = 1000

    /// Bounds the standby journal as a master bounds its own (`MasterEngine.maintenance`): the
    /// newest `keepNewest` entries and those younger than `keepMillis` stay, and so do the
    /// entries after head office's checkpoint (`rollupCheckpoint`) unless that would keep more
    /// than `rollupKeepMost`; tombstones go with the entries. Returns how many entries went.
    @discardableResult
    public func compactStandbyJournal(
        now: Int64, keepNewest: Int64 = 100_000, keepMillis: Int64 = 30 * 24 * 3600 * 1000, rollupKeepMost: Int64 = 1_000_000
    ) throws -> Int {
        let last = try lastJournalSeq()
        var through = last - keepNewest
        if through > 0, let ask = rollupCheckpoint, let store = try metadata("replica.store"),
            let lineage = try metadata("replica.epoch"), let shipped = ask(store, lineage)
        {
            through = min(through, max(shipped, last - rollupKeepMost))
        }
        guard through > 0 else { return 0 }
        return try transaction {
            let dropped = try compactJournal(through: through, recordedBefore: now - keepMillis)
            if dropped > 0, let first = try firstJournalSeq() { try compactTombstones(through: first - 1) }
            return dropped
        }
    }
}

extension ReplicaState {
    /// This state with the terms `db` records.
    func withTerms(of db: OrderDatabase) throws -> ReplicaState {
        var s = self
        s.term = try db.term()
        s.lastTerm = try db.standbyTerm(atSeq: lastSeq)
        s.termStarts = try db.termStarts()
        return s
    }
}
