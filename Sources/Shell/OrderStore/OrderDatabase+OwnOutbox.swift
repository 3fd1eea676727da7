import SyncCore

/// A promoted node's own outbox (Docs/PROTOCOL.md, "A promoted node's own outbox"): the
/// operations its local API acknowledged as a slave, already applied to its orders
/// optimistically, become the master's own writes once it is master proper.
extension OrderDatabase {
    /// Puts the orders the outbox `entries` touch back where the store's history left them, so
    /// that the master applies the entries on that truth: an order as the newest journal entry
    /// naming it left it (removed by a Remove), or absent when no journal entry names it and the
    /// first entry touching it creates it. The keys whose earlier state is not known here (they
    /// came with a snapshot), with every key of an entry touching one of them, are left as they
    /// stand and returned: those entries are journalled as stored. Runs inside the caller's
    /// transaction (the group applying the entries).
    public func restoreOwnOutboxBase(_ entries: [OutboxEntry]) throws -> Set<String> {
        try requireWritable()
        var truth: [String: Order?] = [:]
        var unknown: Set<String> = []
        for entry in entries {
            guard case .success(.operation(let message)) = ClientMessage.decode(entry.message) else { continue }
            for key in entry.orderKeys.map({ $0.lowercased() }) where truth[key] == nil && !unknown.contains(key) {
                if let known = try journalledState(of: key) {
                    truth[key] = .some(known.order)
                } else if message.operation == .create {
                    truth[key] = .some(nil)
                } else {
                    unknown.insert(key)
                }
            }
        }
        // An entry touching an unknown order is journalled whole as stored: its other orders too.
        var grew = true
        while grew {
            grew = false
            for entry in entries {
                let keys = Set(entry.orderKeys.map { $0.lowercased() })
                guard !keys.isDisjoint(with: unknown), !keys.isSubset(of: unknown) else { continue }
                unknown.formUnion(keys)
                grew = true
            }
        }
        for (key, state) in truth.sorted(by: { $0.key < $1.key }) where !unknown.contains(key) {
            if let order = state {
                try upsertOrder(order)
            } else if try order(uuid: key) != nil {
                try deleteOrder(uuid: key)
            }
        }
        return unknown
    }

    /// The state the newest journal entry naming `key` left the order in (nil order: removed);
    /// nil when no journal entry names it.
    private func journalledState(of key: String) throws -> (order: Order?, seq: Int64)? {
        guard let seq = try connection.scalarInt("SELECT max(seq) FROM journal_orders WHERE uuid_key = ?", [.text(key)]),
            let entry = try journalEntry(seq: seq),
            case .success(.applied(let op, let orders, _, _, _, _, _)) = ServerMessage.decode(entry.message),
            let order = orders.first(where: { $0.key == key })
        else { return nil }
        return (op == .remove ? nil : order, seq)
    }
}
