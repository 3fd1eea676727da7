/// Pending local changes re-planned on top of what the master sent.
extension SlaveEngine {
    /// Re-plans the outbox entries touching `keys` (all entries when nil) on top of `overlay`,
    /// in outbox order, updating `overlay`. Lookups not in the overlay read the store unless
    /// `fallBackToStore` is false (a snapshot replaces everything); `staged` reads a staged
    /// snapshot's orders instead.
    func rebase(
        _ overlay: inout [String: Order?], keys: Set<String>?, fallBackToStore: Bool, skipping: Set<String> = [],
        staged: ((String) throws -> Order?)? = nil
    ) throws {
        for e in outbox where !skipping.contains(e.opId) {
            if let t = keys, !e.orderKeys.contains(where: { t.contains($0) }) { continue }
            guard let m = outboxOperations[e.opId] else { continue }
            let current = overlay
            let plan = try OperationPlanner.plan(
                m, now: OrderTimestamp(epochMillis: 0),
                lookup: { uuid in
                    let k = uuid.lowercased()
                    if let v = current[k] { return v }
                    if let staged { return try staged(uuid) }
                    return fallBackToStore ? try self.store.order(uuid: uuid) : nil
                }, wasRemoved: { _ in false })
            for change in plan.changes {
                // Only the orders the master's message changes are re-planned: the replica's
                // copy of any other order already holds this entry's change.
                if let t = keys, !t.contains(change.order.key) { continue }
                switch change {
                case .insert(let o), .update(let o): overlay[o.key] = .some(o)
                case .delete(let o): overlay[o.key] = .some(nil)
                }
            }
        }
    }
}
