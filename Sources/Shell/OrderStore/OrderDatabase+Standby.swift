import JSON
import SyncCore

/// Terms, votes, lineage and the standby copy (`Docs/PROTOCOL.md` 7): the metadata a master
/// keeps of its reign and a standby keeps of the master it would replace.
extension OrderDatabase {
    /// `sync.term`: the current term on a master, the highest followed or promised on a slave;
    /// 1 when absent.
    public func term() throws -> Int64 {
        Int64(try metadata("sync.term") ?? "") ?? 1
    }

    /// Sets `sync.term`.
    public func setTerm(_ term: Int64) throws {
        try setMetadata("sync.term", String(term))
    }

    /// `sync.vote`: the candidate this node promised in a term, or nil.
    public func vote() throws -> (term: Int64, nodeId: String)? {
        guard let text = try metadata("sync.vote"), let space = text.firstIndex(of: " "),
            let term = Int64(text[..<space])
        else { return nil }
        return (term, String(text[text.index(after: space)...]))
    }

    /// Records the promise to `nodeId` in `term` (before the promise is answered).
    public func setVote(term: Int64, nodeId: String) throws {
        try setMetadata("sync.vote", "\(term) \(nodeId)")
    }

    /// `sync.term_starts`: the first seq of each term of this lineage (empty when never written).
    public func termStarts() throws -> TermStarts {
        guard let text = try metadata("sync.term_starts") else { return TermStarts() }
        guard let o = (try? JSONParser.parse(text))?.objectValue else {
            throw StoreError(kind: .corruptRow, message: "sync.term_starts is not a JSON object", path: path)
        }
        return TermStarts(json: o)
    }

    /// Replaces `sync.term_starts`.
    public func setTermStarts(_ starts: TermStarts) throws {
        try setMetadata("sync.term_starts", JSONValue.object(starts.json).serialized())
    }

    /// Records that `term` began at `seq` (term 1 at seq 1 is implied and written too).
    public func addTermStart(term: Int64, seq: Int64) throws {
        try transaction {
            var starts = try termStarts()
            if starts.starts[1] == nil { starts.starts[1] = 1 }
            starts.starts[term] = seq
            try setTermStarts(starts)
        }
    }

    /// `sync.lineage`: the epoch this store's history publishes; the database's own epoch when
    /// absent.
    public func lineage() throws -> String {
        try metadata("sync.lineage") ?? databaseEpoch()
    }

    /// Sets `sync.lineage`.
    public func setLineage(_ lineage: String) throws {
        try setMetadata("sync.lineage", lineage)
    }

    /// Up to `limit` journal entries with `seq > after`, oldest first (a voter's answer to `fetch`).
    public func journalEntries(after seq: Int64, limit: Int) throws -> [JournalEntry] {
        try journal(since: seq, orderUUID: nil, limit: limit)
    }

    /// `standby.master`: the master the standby copy came from, or nil before any `members`.
    public func standbyMaster() throws -> StoreMember? {
        guard let text = try metadata("standby.master") else { return nil }
        guard let member = (try? JSONParser.parse(text))?.objectValue.flatMap(StoreMember.init(json:)) else {
            throw StoreError(kind: .corruptRow, message: "standby.master is not a member object", path: path)
        }
        return member
    }

    /// `standby.settings`: the store's settings as the master last sent them, or nil.
    public func standbySettings() throws -> JSONObject? {
        guard let text = try metadata("standby.settings") else { return nil }
        guard let o = (try? JSONParser.parse(text))?.objectValue else {
            throw StoreError(kind: .corruptRow, message: "standby.settings is not a JSON object", path: path)
        }
        return o
    }

    /// `standby.base`: the seq of the last snapshot applied (the standby journal holds the
    /// entries after it); 0 when none.
    public func standbyBase() throws -> Int64 {
        Int64(try metadata("standby.base") ?? "") ?? 0
    }

    /// Whether a paired terminal votes (`voter`); nil when it is not paired.
    public func isVoter(nodeId: String) throws -> Bool? {
        try connection.scalarInt("SELECT voter FROM paired_terminals WHERE node_id = ?", [.text(nodeId)]).map { $0 != 0 }
    }

    /// The paired terminals with their voter flags, as a master lists them to its standbys.
    public func memberTerminals() throws -> [MemberTerminal] {
        try connection.withStatement(
            "SELECT node_id, public_key, name, paired_ms, revoked_ms, voter, number FROM paired_terminals ORDER BY name, node_id"
        ) { s in
            var out: [MemberTerminal] = []
            while try s.step() {
                out.append(
                    MemberTerminal(
                        member: StoreMember(id: s.text(0), key: s.text(1), name: s.text(2), number: s.optionalInt64(6)),
                        pairedMillis: s.int64(3),
                        revokedMillis: s.optionalInt64(4), voter: s.int64(5) != 0))
            }
            return out
        }
    }

    /// Stores the members a master sent, in the caller's transaction: its paired terminals
    /// replace this file's, and `standby.master`, `standby.settings` are set.
    func saveMembers(_ members: StoreMembers) throws {
        try connection.execute("DELETE FROM paired_terminals")
        for t in members.terminals {
            try insertMember(t)
        }
        try setMetadata("standby.master", JSONValue.object(members.master.json).serialized())
        try setMetadata("standby.settings", JSONValue.object(members.settings).serialized())
    }

    private func insertMember(_ t: MemberTerminal) throws {
        try connection.execute(
            """
            INSERT INTO paired_terminals (node_id, public_key, name, paired_ms, revoked_ms, voter, number)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (node_id) DO UPDATE SET public_key = excluded.public_key, name = excluded.name,
                paired_ms = excluded.paired_ms, revoked_ms = excluded.revoked_ms, voter = excluded.voter,
                number = COALESCE(excluded.number, paired_terminals.number)
            """,
            [
                .text(t.member.id), .text(t.member.key.lowercased()), .text(t.member.name), .integer(t.pairedMillis),
                .integer(t.revokedMillis), .integer(t.voter ? 1 : 0), .integer(t.member.number),
            ])
    }

    /// Where this store's history ends: the replica's last seq or the journal's, the higher (a
    /// standby's journal is empty after a snapshot, its replica is at `standby.base`), and the
    /// term of the entry there.
    public func standbyPosition() throws -> LogPosition {
        let seq = max(Int64(try metadata("replica.last_seq") ?? "") ?? 0, try lastJournalSeq())
        return LogPosition(lastSeq: seq, lastTerm: try standbyTerm(atSeq: seq))
    }

    /// Applies journal entries fetched from a more advanced voter, in one transaction: each
    /// entry at its term, its orders (decoded from its broadcast bytes) and a tombstone for each
    /// removed order. Leading entries this journal holds at the same term are skipped. From the
    /// first that differs, this store's own entries are replaced as a slave's are on `diverged`:
    /// back into the outbox (each once, by its op id or `requeue-<term>-<seq>`), out of the
    /// journal and tombstones, and an order only they touched goes back to what the journal kept
    /// says of it. The first new entry must follow the store's last seq (`standbyPosition`): a
    /// gap, own entries to replace that the journal no longer holds, an order that cannot be
    /// put back, or a message that does not decode throws and stores nothing. Returns how many
    /// were applied.
    @discardableResult
    public func applyFetchedEntries(_ entries: [JournalEntry], atMillis now: Int64 = 0) throws -> Int {
        try requireWritable()
        return try transaction {
            var last = try standbyPosition().lastSeq
            var fresh = entries.sorted(by: { $0.seq < $1.seq })[...]
            while let e = fresh.first, e.seq <= last, try journalEntry(seq: e.seq)?.term == e.term { fresh.removeFirst() }
            guard let first = fresh.first else { return 0 }
            var replaced = (touched: Set<String>(), created: Set<String>())
            if first.seq <= last {
                replaced = try requeueOwnEntries(after: first.seq - 1, through: last, atMillis: now)
                last = first.seq - 1
            }
            for entry in fresh {
                guard entry.seq == last + 1 else {
                    throw StoreError(
                        kind: .invalidArgument, message: "fetched entry \(entry.seq) does not follow entry \(last)", path: path)
                }
                guard case .success(.applied(let op, let orders, _, _, _, nil, _)) = ServerMessage.decode(entry.message) else {
                    throw StoreError(
                        kind: .invalidArgument, message: "fetched entry \(entry.seq) is not a broadcast", path: path)
                }
                for o in orders {
                    replaced.touched.remove(o.uuid.lowercased())
                    if op == .remove {
                        if try order(uuid: o.uuid) != nil { try deleteOrder(uuid: o.uuid) }
                        try addTombstone(uuid: o.uuid, seq: entry.seq)
                    } else {
                        try upsertOrder(o)
                    }
                }
                try appendStandbyEntry(entry)
                last = entry.seq
            }
            try restoreOrders(replaced.touched, created: replaced.created)
            try noteFetchedTerms(fresh, after: first.seq - 1)
            try setMetadata("replica.last_seq", String(last))
            return fresh.count
        }
    }

    /// The term starts of fetched `entries` (the first applied after `keep`): a start this
    /// store knew past `keep` went with its replaced entries, and each term the entries bring
    /// begins at its first entry. Without them the entries of a term the candidate learnt only
    /// by the fetch would read as entries of the term before, and a slave holding that earlier
    /// term's own entries at those seqs would be told they are shared (`diverged` too late).
    private func noteFetchedTerms(_ entries: ArraySlice<JournalEntry>, after keep: Int64) throws {
        let known = try termStarts()
        var starts = known.starts.filter { $0.value <= keep || $0.key == 1 }
        if starts[1] == nil { starts[1] = 1 }
        for e in entries where starts[e.term] == nil || starts[e.term]! > e.seq { starts[e.term] = e.seq }
        if starts != known.starts { try setTermStarts(TermStarts(starts)) }
    }

    /// Moves this store's journal entries after `keep` (up to `last`) back into its outbox, as
    /// `SlaveEngine.diverged` does, and deletes them with their tombstones. Returns the orders
    /// they touched and those whose first touch among them was a create (lower case).
    private func requeueOwnEntries(after keep: Int64, through last: Int64, atMillis now: Int64) throws
        -> (touched: Set<String>, created: Set<String>)
    {
        guard (try firstJournalSeq() ?? last + 1) <= keep + 1 else {
            throw StoreError(
                kind: .invalidArgument,
                message: "the entries after \(keep) to replace are no longer in the journal (it ends at \(last))", path: path)
        }
        var ids = Set(try outboxEntries().map(\.opId))
        var touched = Set<String>()
        var created = Set<String>()
        var requeued: [OutboxEntry] = []
        for e in try journal(since: keep, orderUUID: nil, limit: Int.max) {
            for uuid in e.orderUUIDs.map({ $0.lowercased() }) where touched.insert(uuid).inserted && e.operation == .create {
                created.insert(uuid)
            }
            let id = OutboxEntry.requeuedId(e)
            guard !ids.contains(id), let entry = OutboxEntry.requeued(e, baseSeq: keep, now: now) else { continue }
            ids.insert(id)
            requeued.append(entry)
        }
        try prependOutbox(requeued)
        try connection.execute("DELETE FROM journal_orders WHERE seq > ?", [.integer(keep)])
        try connection.execute("DELETE FROM journal WHERE seq > ?", [.integer(keep)])
        try connection.execute("DELETE FROM tombstones WHERE seq > ?", [.integer(keep)])
        return (touched, created)
    }

    /// Puts each order of `uuids` (touched only by replaced entries) back as the journal's last
    /// entry naming it says; an order with no such entry that the replaced entries created is
    /// deleted. Throws for any other: its earlier state is not known.
    private func restoreOrders(_ uuids: Set<String>, created: Set<String>) throws {
        for uuid in uuids.sorted() {
            // Entries kept below a snapshot's base (7.19) may be older than the snapshot's orders.
            if let e = try journal(since: try standbyBase(), orderUUID: uuid, limit: Int.max).last {
                guard case .success(.applied(let op, let orders, _, _, _, nil, _)) = ServerMessage.decode(e.message) else {
                    throw StoreError(kind: .invalidArgument, message: "journal entry \(e.seq) is not a broadcast", path: path)
                }
                if op != .remove, let o = orders.first(where: { $0.uuid.lowercased() == uuid }) {
                    try upsertOrder(o)
                    continue
                }
            } else if !created.contains(uuid) {
                throw StoreError(
                    kind: .invalidArgument,
                    message: "order \(uuid) was changed only by replaced entries and its earlier state is not in the journal", path: path)
            }
            if try order(uuid: uuid) != nil { try deleteOrder(uuid: uuid) }
        }
    }

    /// A standby becomes the master of term `term`, in one transaction: `sync.term`, the term's
    /// start (the seq after its journal's last; the starts of earlier terms at or after it
    /// dropped), `sync.lineage`, and the old master among its
    /// paired terminals (so it can connect again, as a slave) when its members did not list it.
    public func becomeMasterFromStandby(term: Int64, lineage: String, oldMaster: StoreMember?, atMillis now: Int64 = 0)
        throws
    {
        try requireWritable()
        try transaction {
            try setTerm(term)
            // The replica may stand past its journal (a snapshot and nothing after it): the
            // master's sequence goes on from the replica's, never again from an earlier one.
            let replica = Int64(try metadata("replica.last_seq") ?? "") ?? 0
            if replica > (try lastJournalSeq()) { try setMetadata("journal.floor", String(replica)) }
            // A term recorded from a master's `ready` that applied nothing here goes (7.6).
            try setTermStarts(try termStarts().beginning(term: term, at: try lastJournalSeq() + 1))
            try setLineage(lineage)
            if let m = oldMaster {
                try connection.execute(
                    "DELETE FROM paired_terminals WHERE public_key = ? AND node_id <> ?", [.text(m.key.lowercased()), .text(m.id)])
                // A master keeps its own row (7.20): then it is a member as its master listed it
                // (its name, voter flag, pairing time); a store from before that gets one here.
                if try isVoter(nodeId: m.id) == nil {
                    try insertMember(MemberTerminal(member: m, pairedMillis: now))
                }
            }
        }
    }

    /// A master steps down (`MasterNode.stepDown`): in one transaction its store becomes a
    /// replica of its own journal, the history the next master compares with its own: the
    /// replica at the journal's last seq, of `lineage` and `store`, `sync.term` the term it led,
    /// and no snapshot wanted. A need of a snapshot left from before a promotion (a refused local
    /// change, say) must go: the hello would then carry no epoch, the new master could not tell
    /// where the histories part, and the entries only this store holds would be replaced by the
    /// snapshot instead of going back into its outbox with their op ids.
    public func becomeReplicaOfOwnJournal(lineage: String, store: String, term: Int64) throws {
        try requireWritable()
        try transaction {
            try setMetadata("replica.last_seq", String(try lastJournalSeq()))
            try setMetadata("replica.epoch", lineage)
            try setMetadata("replica.store", store)
            try setMetadata("replica.needs_snapshot", "0")
            try setTerm(term)
        }
    }
}
