import JSON

/// What a standby keeps through a snapshot (`Docs/PROTOCOL.md` 7.19): the entries it would
/// re-queue on a later `diverged` whose `keep` lies below the snapshot's base. A snapshot holds
/// the history up to its seq only as orders; without these, a write acknowledged with this node
/// as the second disk could be gone once a promotion leaves out every other holder.
extension SlaveEngine {
    /// Records in `c` (a snapshot's commit) what stays: the journal entries above the stable seq
    /// this slave knew, and its own writes the snapshot's `applied` answered above it (`settled`,
    /// with the seq each was applied at), as journal entries of their seq.
    func keepThroughSnapshot(
        _ snap: SnapshotPart, settled: [(opId: String, keys: [String], seq: Int64?)], into c: inout SlaveCommit
    ) {
        c.keepJournalAbove = stableSeq
        let starts = snap.termStarts ?? termStarts
        c.keptEntries = settled.compactMap { st in
            guard let s = st.seq, s > stableSeq, s <= snap.seq, let e = outbox.first(where: { $0.opId == st.opId }) else {
                return nil
            }
            return Self.keptEntry(e, seq: s, term: starts.term(ofSeq: s), origin: "\(terminalName) [\(terminalId)]", now: now)
        }
    }

    /// A heartbeat said a higher stable seq `s`: it is committed (`SlaveCommit.stableSeq`), and
    /// with it the entries kept through a snapshot at or below it leave the journal: no
    /// promotion that was not forced undoes them, so no `diverged` re-queues them. A failed
    /// write ends the link, as any failed write of the replica does.
    func stableSeqRose(to s: Int64, _ out: inout [Action]) {
        var c = SlaveCommit()
        c.stableSeq = s
        do {
            try store.commit(c)
            stableSeq = s
        } catch {
            out.append(.log(EngineLog(.error, "replica.write_failed", [("error", "\(error)")])))
            out.append(.abort(reason: "replica write failed"))
        }
    }

    /// The journal entry of outbox entry `e` applied by the master at `seq` in term `term`: the
    /// operation as this slave sent it, in a broadcast's shape (what `OutboxEntry.requeued`
    /// reads back). Nil when the outbox message holds no operation.
    static func keptEntry(_ e: OutboxEntry, seq: Int64, term: Int64, origin: String, now: Int64) -> JournalEntry? {
        guard let sent = (try? JSONParser.parse(e.message))?.objectValue, let orders = sent["orders"]?.arrayValue,
            let raw = sent["operation"]?.intValue, let op = OperationKind(rawValue: Int(raw))
        else { return nil }
        var o = ServerMessage.applied(operation: op, orders: [], seq: seq, opId: e.opId, origin: origin, snapshot: nil).jsonObject()
        o["orders"] = .array(orders)
        o["term"] = .int(term)
        return JournalEntry(
            seq: seq, term: term, opId: e.opId, origin: origin, operation: op, orderUUIDs: e.orderKeys,
            message: JSONValue.object(o).serializedBytes(), recordedAtMillis: now)
    }
}
