import JSON

extension MasterEngine {
    /// One entry of a promoted node's own outbox (Docs/PROTOCOL.md, "A promoted node's own
    /// outbox"), applied as the master's own write with its operation id.
    ///
    /// With `asStored` false the store holds its orders as the store's history left them, and
    /// the entry is applied like any local write: planned, journalled and broadcast, a repeat
    /// answered from the journal, a refusal recorded. With `asStored` true the store no longer
    /// knows the orders as they were before the entry (they came with a snapshot and were changed
    /// here since): its orders are journalled and broadcast as they stand now, which already
    /// includes the entry (a removed one as removed), so every terminal ends where this store is.
    /// `keys` are the lower-case UUIDs the entry touches.
    public func ownOutboxWrite(
        _ message: OperationMessage, keys: [String], asStored: Bool, origin: String, now: Int64
    ) -> (ApplyOutcome, [Action]) {
        guard asStored, let opId = message.opId, (try? store.journalEntry(opId: opId)) == nil,
            (try? store.appliedOpIdSeq(opId: opId)) == nil
        else {
            return localWrite(message, origin: origin, now: now)
        }
        var outcome = ApplyOutcome(operation: message.operation)
        var changes: [OrderChange] = []
        var orders: [Order] = []
        do {
            for key in keys {
                switch (message.operation, try store.order(uuid: key)) {
                case (.remove, nil):
                    // Gone here already: journalled as a removal (and its tombstone) all the same.
                    let gone = Self.removedOrder(key, in: message)
                    changes += [.insert(gone), .delete(gone)]
                    orders.append(gone)
                case (.remove, _?), (.create, nil), (.update, nil):
                    // A later entry of the outbox changed it again: that entry carries it.
                    continue
                case (_, let order?):
                    changes.append(.update(order))
                    orders.append(order)
                }
            }
        } catch {
            outcome.errors = [WireError(.storageFailed, "could not read orders: \(error)")]
            return (outcome, [])
        }
        var out: [Action] = []
        guard !orders.isEmpty else { return (outcome, out) }
        let seq = lastSeq + 1
        var object = ServerMessage.applied(
            operation: message.operation, orders: orders, seq: seq, opId: opId, origin: origin, snapshot: nil
        ).jsonObject()
        object["term"] = .int(terms.term)
        let text = JSONValue.object(object).serializedBytes()
        let entry = JournalEntry(
            seq: seq, term: terms.term, opId: opId, origin: origin, operation: message.operation,
            orderUUIDs: orders.map(\.uuid), message: text, recordedAtMillis: now)
        do {
            try store.commit(changes, entry: entry)
        } catch {
            lastSeq = (try? store.lastJournalSeq()) ?? lastSeq
            outcome.errors = orders.map { WireError(.storageFailed, "the master could not store the change: \(error)", uuid: $0.uuid) }
            return (outcome, [])
        }
        lastSeq = seq
        outcome.seq = seq
        outcome.broadcast = text
        outcome.applied = orders
        deliver(outcome, message: message, origin: origin, sender: nil, now: now, &out)
        return (outcome, route(out))
    }

    /// The order `key` as the Remove `message` names it (its fields when it carries them).
    private static func removedOrder(_ key: String, in message: OperationMessage) -> Order {
        for raw in message.orders {
            guard let o = raw.objectValue, o["uuid"]?.stringValue?.lowercased() == key else { continue }
            if let order = try? OrderFields.storedOrder(from: o, index: nil) { return order }
            return Order(uuid: o["uuid"]?.stringValue ?? key, customerName: "", created: OrderTimestamp(epochMillis: 0))
        }
        return Order(uuid: key, customerName: "", created: OrderTimestamp(epochMillis: 0))
    }
}
