/// Recognising a retried operation id (`Docs/PROTOCOL.md` 3.1, 7.2): by its journal entry, by
/// the ids a node promoted from a snapshot keeps below its journal, or by its refusals; and the
/// ids a standby's snapshot carries so that it can do the same once promoted.
extension MasterEngine {
    /// How many operation ids a standby's snapshot carries at most (the journal's
    /// `journalKeepNewest`: the newest ones, those a terminal may still retry).
    public static let appliedIdsSent = 100_000

    /// Where the order with `uuid` stands in a repeated message, for the errors answered again
    /// (the rejection log keeps the order's UUID, not its place in the message).
    private static func index(of uuid: String?, in message: OperationMessage) -> Int? {
        guard let uuid = uuid?.lowercased() else { return nil }
        return message.orders.firstIndex { $0.objectValue?["uuid"]?.stringValue?.lowercased() == uuid }
    }

    /// The answer to `message` when its operation id `id` was answered before, nil when it is
    /// new (or its earlier try failed on the master's storage: it is tried again).
    func repeatOutcome(of message: OperationMessage, opId id: String) throws -> ApplyOutcome? {
        var outcome = ApplyOutcome(operation: message.operation)
        // The orders refused the first time are refused again, with the same reasons (not a
        // storage failure of an earlier try: the operation is applied now).
        func refusedBefore() throws -> [WireError] {
            try store.rejections(opId: id).filter { $0.code != .storageFailed && $0.code != .invalidMessage }
                .map { WireError($0.code, $0.message, uuid: $0.orderUUID, index: Self.index(of: $0.orderUUID, in: message)) }
        }
        if let entry = try store.journalEntry(opId: id) {
            outcome.seq = entry.seq
            outcome.broadcast = entry.message
            outcome.isRepeat = true
            if case .success(.applied(_, let orders, _, _, _, _, _)) = ServerMessage.decode(entry.message) {
                outcome.applied = orders
            }
            outcome.repeatedErrors = try refusedBefore()
            return outcome
        }
        // Applied below this node's journal (it was promoted from a snapshot): its seq, and no
        // broadcast to send again (the snapshot holds the orders, and the sender's copy is
        // brought back to them).
        if let seq = try store.appliedOpIdSeq(opId: id) {
            outcome.seq = seq
            outcome.isRepeat = true
            outcome.repeatedErrors = try refusedBefore()
            return outcome
        }
        // Refused as a whole the first time (nothing journalled): the same answer again,
        // unless the refusal was the master's own storage failure (then it is retried).
        let refused = try store.rejections(opId: id)
        guard !refused.isEmpty, !refused.contains(where: { $0.code == .storageFailed || $0.code == .invalidMessage }) else {
            return nil
        }
        outcome.isRepeat = true
        outcome.repeatedErrors = refused.map {
            WireError($0.code, $0.message, uuid: $0.orderUUID, index: Self.index(of: $0.orderUUID, in: message))
        }
        return outcome
    }

    /// Where the history applied `opId` at or below `lastSeq`: its journal entry's seq, or the
    /// seq kept below the journal; nil when it did not (a hello's `pending`, `applied`).
    func appliedSeq(opId: String) -> Int64? {
        guard let seq = (try? store.journalEntry(opId: opId))?.seq ?? (try? store.appliedOpIdSeq(opId: opId)), seq <= lastSeq
        else { return nil }
        return seq
    }

    /// The `opIds` messages a standby's snapshot at `lastSeq` is led by (`AppliedIdsPart`): the
    /// operation ids of the history up to it, so that once promoted it recognises a retry of
    /// one. None when the history holds none, or when they cannot be read (logged; the snapshot
    /// goes out all the same).
    func appliedIdsMessages(to id: Int, _ out: inout [Action]) -> [[UInt8]] {
        do {
            let ids = try store.appliedOpIds(through: lastSeq, limit: Self.appliedIdsSent)
            return AppliedIdsPart.parts(of: ids, seq: lastSeq).map { $0.encodedBytes() }
        } catch {
            let address = peers[id]?.address ?? "?"
            out.append(.log(EngineLog(.error, "snapshot.ids_failed", [("peer.address", address), ("error", "\(error)")])))
            return []
        }
    }
}
