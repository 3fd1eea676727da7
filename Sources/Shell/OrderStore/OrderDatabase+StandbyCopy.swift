import JSON
import SyncCore

/// A slave's standby copy on SQLite (`Docs/PROTOCOL.md` 7.2): the master's journal entries and
/// tombstones in the same tables a master uses, written in the transaction of the `SlaveCommit`
/// that applies them.
extension OrderDatabase {
    /// The parts of `c` that come before its order changes: a snapshot empties the standby
    /// journal (`standby.base`), keeping the operation ids below it and, of the lineage it
    /// followed, the entries it would re-queue (`keepJournalAbove`, `keptEntries`), a divergence
    /// drops its entries after `truncateJournal`.
    func applyStandbyBefore(_ c: SlaveCommit) throws {
        if let base = c.standbyBase {
            let followed = try metadata("replica.epoch")
            try keepAppliedOpIds(base: base, epoch: c.epoch, from: c.appliedOpIds)
            if let above = c.keepJournalAbove, c.epoch == nil || c.epoch == followed {
                try keepJournal(above: above, through: base, adding: c.keptEntries)
            } else {
                try connection.execute("DELETE FROM journal_orders")
                try connection.execute("DELETE FROM journal")
            }
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
        if let s = c.stableSeq { try raiseStableSeq(to: s) }
    }

    /// The store's stable seq is `seq` (Docs/PROTOCOL.md 7.18), in the caller's transaction:
    /// `sync.stable_seq` is raised to it (never lowered), and the entries kept through a
    /// snapshot (7.19: at or below `standby.base`, outside the gapless journal) at or below it
    /// leave the journal: no promotion that was not forced undoes them, so no `diverged` has
    /// them to re-queue. Their operation ids stay below the journal (`applied_op_ids`), where a
    /// retry of them still finds its first seq. The gapless journal above the base is bounded
    /// by compaction alone. Returns how many entries went.
    @discardableResult
    public func raiseStableSeq(to seq: Int64) throws -> Int {
        let onDisk = Int64(try metadata(StableSeq.metadataKey) ?? "") ?? 0
        if seq > onDisk { try setMetadata(StableSeq.metadataKey, String(seq)) }
        let through = min(seq, Int64(try metadata("standby.base") ?? "") ?? 0)
        guard through > 0 else { return 0 }
        try connection.execute(
            """
            INSERT INTO applied_op_ids (op_id, seq) SELECT op_id, seq FROM journal WHERE op_id IS NOT NULL AND seq <= ?
            ON CONFLICT (op_id) DO NOTHING
            """, [.integer(through)])
        try connection.execute("DELETE FROM journal_orders WHERE seq <= ?", [.integer(through)])
        return try connection.execute("DELETE FROM journal WHERE seq <= ?", [.integer(through)])
    }

    /// A snapshot at `base` of the history this standby followed (Docs/PROTOCOL.md 7.19): of its
    /// journal only the entries in (`above`, `base`] stay (those at or below the stable seq no
    /// promotion undoes, those above the base are not the master's), with `kept` (its own
    /// writes the snapshot answered) added where the journal holds neither their seq nor their
    /// operation id. They stay below `standby.base`, outside the gapless journal a catch-up or
    /// a fetch reads (`firstJournalSeq`), for a later `diverged` to re-queue.
    func keepJournal(above: Int64, through base: Int64, adding kept: [JournalEntry]) throws {
        for table in ["journal_orders", "journal"] {
            try connection.execute("DELETE FROM \(table) WHERE seq <= ? OR seq > ?", [.integer(above), .integer(base)])
        }
        for e in kept where e.seq > above && e.seq <= base {
            if try journalEntry(seq: e.seq) != nil { continue }
            if let id = e.opId, try journalEntry(opId: id) != nil { continue }
            try appendJournal(e)
        }
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

/// Operation ids below a standby's snapshot (`applied_op_ids`, migration 15; Docs/PROTOCOL.md
/// 7.2): a snapshot brings orders without the journal entries that made them, so a node
/// promoted from it would not recognise a retry of an operation applied below its base. The
/// master sends, with each snapshot to an OrderSync standby, the operation ids its history holds
/// up to the snapshot's seq (`appliedOpIds`); the standby keeps them, and its own journal's, in
/// the snapshot's transaction (`keepAppliedOpIds`), and a promoted master's repeat check reads
/// them (`appliedOpIdSeq`). Bounded as the journal is: compaction drops those at or below the
/// entries it drops, and a snapshot keeps the newest `appliedOpIdsKept`.
extension OrderDatabase {
    /// How many operation ids below its journal a store keeps at most (the journal's own
    /// `journalKeepNewest`).
    public static let appliedOpIdsKept = 100_000

    /// The seq at which operation `opId` was applied below this store's journal, or nil.
    public func appliedOpIdSeq(opId: String) throws -> Int64? {
        try connection.scalarInt("SELECT seq FROM applied_op_ids WHERE op_id = ?", [.text(opId)])
    }

    /// The operation ids this store's history holds at seqs up to `through`: those of its journal
    /// and those it keeps below it, the newest `limit` by seq (an id in both, once: the journal's).
    public func appliedOpIds(through seq: Int64, limit: Int = appliedOpIdsKept) throws -> [String: Int64] {
        try connection.withStatement(
            """
            SELECT op_id, seq FROM journal WHERE op_id IS NOT NULL AND seq <= ?1
            UNION ALL
            SELECT op_id, seq FROM applied_op_ids
            WHERE seq <= ?1 AND op_id NOT IN (SELECT op_id FROM journal WHERE op_id IS NOT NULL)
            ORDER BY seq DESC LIMIT ?2
            """, [.integer(seq), .integer(Int64(limit))]
        ) { statement in
            var ids: [String: Int64] = [:]
            while try statement.step() { ids[statement.text(0)] = statement.int64(1) }
            return ids
        }
    }

    /// A snapshot at `base` of lineage `epoch` replaces the standby journal, in the caller's
    /// transaction (before the journal is emptied): the journal's own operation ids up to `base`
    /// (when the snapshot is of the lineage the replica followed; else none of those kept before
    /// either: another history's ids are not this one's) and the master's `ids` (its word wins)
    /// are kept, then only the newest `appliedOpIdsKept` of all.
    func keepAppliedOpIds(base: Int64, epoch: String?, from ids: [String: Int64]) throws {
        let followed = try metadata("replica.epoch")
        guard epoch == nil || epoch == followed else {
            try connection.execute("DELETE FROM applied_op_ids")
            try insertAppliedOpIds(ids, base: base)
            return
        }
        try connection.execute(
            """
            INSERT INTO applied_op_ids (op_id, seq) SELECT op_id, seq FROM journal WHERE op_id IS NOT NULL AND seq <= ?
            ON CONFLICT (op_id) DO UPDATE SET seq = excluded.seq
            """, [.integer(base)])
        try insertAppliedOpIds(ids, base: base)
    }

    /// Records the master's `ids` at or below `base` (over what was kept of them), then keeps
    /// only the newest `appliedOpIdsKept`.
    private func insertAppliedOpIds(_ ids: [String: Int64], base: Int64) throws {
        for (id, seq) in ids where seq <= base {
            try connection.execute(
                "INSERT INTO applied_op_ids (op_id, seq) VALUES (?, ?) ON CONFLICT (op_id) DO UPDATE SET seq = excluded.seq",
                [.text(id), .integer(seq)])
        }
        try connection.execute(
            """
            DELETE FROM applied_op_ids WHERE seq < (
                SELECT seq FROM applied_op_ids ORDER BY seq DESC LIMIT 1 OFFSET ?)
            """, [.integer(Int64(Self.appliedOpIdsKept - 1))])
    }

    /// Journal compaction through `seq` takes the operation ids kept at or below it too (in the
    /// caller's transaction): a retry of them is as old as the entries that went.
    func dropAppliedOpIds(through seq: Int64) throws {
        try connection.execute("DELETE FROM applied_op_ids WHERE seq <= ?", [.integer(seq)])
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
