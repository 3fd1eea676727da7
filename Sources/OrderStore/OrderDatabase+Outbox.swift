import SyncCore

/// One local change of a slave waiting for its master's answer.
public struct OutboxEntry: Equatable, Sendable {
    /// Order of the change on this terminal (increasing).
    public var position: Int64
    /// The operation id sent with it; the master answers a repeat without applying it again.
    public var opId: String
    /// The operation message as it is sent (JSON text).
    public var message: String
    /// Lower-case UUIDs of the orders it touches.
    public var orderKeys: [String]
    /// When it was made (wall clock, milliseconds), for operators.
    public var createdMillis: Int64

    /// An entry from its fields.
    public init(position: Int64 = 0, opId: String, message: String, orderKeys: [String], createdMillis: Int64) {
        self.position = position
        self.opId = opId
        self.message = message
        self.orderKeys = orderKeys
        self.createdMillis = createdMillis
    }
}

/// A slave's durable outbox: a local change and its outbox entry are written in one transaction
/// (`synchronous=FULL`), and an entry leaves only when the master has answered for it.
extension OrderDatabase {
    /// Appends an entry; returns it with its position.
    @discardableResult
    public func appendOutbox(_ entry: OutboxEntry) throws -> OutboxEntry {
        try requireWritable()
        let keys = JSONValue.array(entry.orderKeys.map { .string($0) }).serialized()
        try connection.execute("INSERT INTO outbox (op_id, message, order_keys, created_ms) VALUES (?, ?, ?, ?)",
                               [.text(entry.opId), .text(entry.message), .text(keys), .integer(entry.createdMillis)])
        var stored = entry
        stored.position = try connection.scalarInt("SELECT last_insert_rowid()") ?? 0
        return stored
    }

    /// Every entry, oldest first.
    public func outboxEntries() throws -> [OutboxEntry] {
        try connection.withStatement("SELECT position, op_id, message, order_keys, created_ms FROM outbox ORDER BY position") { statement in
            var out: [OutboxEntry] = []
            while try statement.step() {
                let keys = (try? JSONParser.parse(statement.text(3)).arrayValue?.compactMap(\.stringValue)) ?? nil
                out.append(OutboxEntry(position: statement.int64(0), opId: statement.text(1), message: statement.text(2),
                                       orderKeys: keys ?? [], createdMillis: statement.int64(4)))
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
}
