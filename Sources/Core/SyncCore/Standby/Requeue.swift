import JSON

extension OutboxEntry {
    /// A journal entry put back into an outbox because another term's history replaced it
    /// (`Docs/PROTOCOL.md` 7.5): the operation again, with its op id (or `requeue-<term>-<seq>`
    /// when it had none, so two nodes re-queueing one entry make one id), its orders as the
    /// broadcast carried them, less `version`: the broadcast's version was this history's, and
    /// as a precondition it would refuse the retry (`conflict`) in the other. Nil when the
    /// entry's message holds no orders.
    public static func requeued(_ entry: JournalEntry, baseSeq: Int64, now: Int64) -> OutboxEntry? {
        guard let orders = (try? JSONParser.parse(entry.message))?.objectValue?["orders"]?.arrayValue else { return nil }
        let id = requeuedId(entry)
        let plain: [JSONValue] = orders.map { order in
            guard case .object(var o) = order else { return order }
            o["version"] = nil
            return .object(o)
        }
        return OutboxEntry(
            opId: id, message: OperationMessage(operation: entry.operation, orders: plain, opId: id).encodedBytes(),
            orderKeys: entry.orderUUIDs.map { $0.lowercased() }, createdMillis: now, baseSeq: baseSeq)
    }

    /// The op id a re-queued entry goes by.
    public static func requeuedId(_ entry: JournalEntry) -> String { entry.opId ?? "requeue-\(entry.term)-\(entry.seq)" }
}
