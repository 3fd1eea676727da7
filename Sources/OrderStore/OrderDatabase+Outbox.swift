import SyncCore

/// A slave's durable outbox: a local change and its outbox entry are written in one transaction
/// (`synchronous=FULL`), and an entry leaves only when the master has answered for it.
extension OrderDatabase {
    /// Appends an entry; returns it with its position.
    @discardableResult
    public func appendOutbox(_ entry: OutboxEntry) throws -> OutboxEntry {
        try requireWritable()
        let keys = JSONValue.array(entry.orderKeys.map { .string($0) }).serialized()
        try connection.execute("INSERT INTO outbox (op_id, message, order_keys, created_ms, base_seq) VALUES (?, ?, ?, ?, ?)",
                               [.text(entry.opId), .text(entry.message), .text(keys), .integer(entry.createdMillis), .integer(entry.baseSeq)])
        var stored = entry
        stored.position = try connection.scalarInt("SELECT last_insert_rowid()") ?? 0
        return stored
    }

    /// Every entry, oldest first.
    public func outboxEntries() throws -> [OutboxEntry] {
        try connection.withStatement("SELECT position, op_id, message, order_keys, created_ms, base_seq FROM outbox ORDER BY position") { statement in
            var out: [OutboxEntry] = []
            while try statement.step() {
                let keys = (try? JSONParser.parse(statement.text(3)).arrayValue?.compactMap(\.stringValue)) ?? nil
                out.append(OutboxEntry(position: statement.int64(0), opId: statement.text(1), message: statement.text(2),
                                       orderKeys: keys ?? [], createdMillis: statement.int64(4), baseSeq: statement.int64(5)))
            }
            return out
        }
    }

    /// Removes the entry of `opId` (the master answered for it); false when there was none.
    @discardableResult
    public func deleteOutbox(opId: String) throws -> Bool {
        try requireWritable()
        return try connection.execute("DELETE FROM outbox WHERE op_id = ?", [.text(opId)]) > 0
    }

    /// Number of entries.
    public func outboxCount() throws -> Int {
        Int(try connection.scalarInt("SELECT count(*) FROM outbox") ?? 0)
    }

    /// Keeps (or, with nil, clears) the master's refusal of the last local change to an order.
    public func setSyncError(orderKey: String, _ error: WireError?) throws {
        try requireWritable()
        if let e = error {
            try connection.execute("INSERT OR REPLACE INTO sync_errors (uuid_key, code, message) VALUES (?, ?, ?)",
                                   [.text(orderKey.lowercased()), .text(e.code.rawValue), .text(e.message)])
        } else {
            try connection.execute("DELETE FROM sync_errors WHERE uuid_key = ?", [.text(orderKey.lowercased())])
        }
    }

    /// Every kept refusal, by order key.
    public func syncErrors() throws -> [String: WireError] {
        try connection.withStatement("SELECT uuid_key, code, message FROM sync_errors") { statement in
            var out: [String: WireError] = [:]
            while try statement.step() {
                let key = statement.text(0)
                let code = WireErrorCode(rawValue: statement.text(1)) ?? .invalidMessage
                out[key] = WireError(code, statement.text(2), uuid: key)
            }
            return out
        }
    }
}
