import SyncCore

/// Orders StorePOS apps hold that the store does not (`ForeignOrder`), for operators: the
/// first `maxForeignOrders` uuids are kept.
extension OrderDatabase {
    /// How many foreign orders are kept: an app naming random uuids all night cannot fill the
    /// disk (past it, new uuids are not recorded; known ones are still refreshed).
    public static let maxForeignOrders: Int64 = 10_000

    /// Records a sighting: a new row, or the known one refreshed (its state stays). True when
    /// the uuid (any case) was not recorded before.
    @discardableResult
    public func noteForeignOrder(_ f: ForeignOrder) throws -> Bool {
        try requireWritable()
        return try transaction {
            let refreshed = try connection.execute(
                """
                UPDATE storepos_foreign_orders SET address = ?, content = ?, last_seen_ms = ?, seen = seen + 1
                WHERE uuid_key = ?
                """,
                [.text(f.address), .text(f.content), .integer(f.lastSeenMillis), .text(f.uuid.lowercased())])
            guard refreshed == 0 else { return false }
            guard (try connection.scalarInt("SELECT count(*) FROM storepos_foreign_orders") ?? 0) < Self.maxForeignOrders else {
                return false
            }
            try connection.execute(
                """
                INSERT INTO storepos_foreign_orders (uuid_key, uuid, address, content, first_seen_ms, last_seen_ms, seen, state)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .text(f.uuid.lowercased()), .text(f.uuid), .text(f.address), .text(f.content), .integer(f.firstSeenMillis),
                    .integer(f.lastSeenMillis), .integer(f.count), .text(f.state.rawValue),
                ])
            return true
        }
    }

    /// The foreign orders recorded, first seen first; only those in `state` when given.
    public func foreignOrders(state: ForeignOrder.State? = nil) throws -> [ForeignOrder] {
        let filter = state == nil ? "" : "WHERE state = ?"
        let values: [SQLiteValue] = state.map { [.text($0.rawValue)] } ?? []
        return try connection.withStatement(
            """
            SELECT uuid, address, content, first_seen_ms, last_seen_ms, seen, state FROM storepos_foreign_orders \(filter)
            ORDER BY first_seen_ms, uuid_key
            """, values
        ) { statement in
            var out: [ForeignOrder] = []
            while try statement.step() {
                out.append(
                    ForeignOrder(
                        uuid: statement.text(0), address: statement.text(1), content: statement.text(2),
                        firstSeenMillis: statement.int64(3), lastSeenMillis: statement.int64(4), count: statement.int64(5),
                        state: ForeignOrder.State(rawValue: statement.text(6)) ?? .seen))
            }
            return out
        }
    }

    /// Sets the state of these foreign orders (by uuid, any case); returns how many it changed.
    @discardableResult
    public func setForeignOrders(_ uuids: [String], state: ForeignOrder.State) throws -> Int {
        try requireWritable()
        return try transaction {
            var changed = 0
            for uuid in uuids {
                changed += try connection.execute(
                    "UPDATE storepos_foreign_orders SET state = ? WHERE uuid_key = ?", [.text(state.rawValue), .text(uuid.lowercased())])
            }
            return changed
        }
    }
}
