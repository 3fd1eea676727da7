import SyncCore

/// Streaming reads for `ordersync export`: one SQLite statement stepped row by row, so memory
/// stays flat however many orders there are.
extension OrderDatabase {
    /// Calls `body` with every order created in `fromMillis..<toMillis` (either bound open when
    /// nil) and of `status` (any when nil), ordered by `created`, then UUID, in one read
    /// transaction (a consistent view while the node writes).
    public func forEachOrder(
        fromMillis: Int64?, toMillis: Int64?, status: OrderStatus?, _ body: (Order) throws -> Void
    ) throws {
        var conditions: [String] = []
        var values: [SQLiteValue] = []
        if let f = fromMillis {
            conditions.append("created_ms >= ?")
            values.append(.integer(f))
        }
        if let t = toMillis {
            conditions.append("created_ms < ?")
            values.append(.integer(t))
        }
        if let s = status {
            conditions.append("status = ?")
            values.append(.text(s.rawValue))
        }
        let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        try reading {
            try connection.withStatement(
                "SELECT \(Self.orderColumns) FROM orders \(filter) ORDER BY created_ms, uuid_key", values
            ) { statement in
                while try statement.step() {
                    try body(try decodeOrder(statement))
                }
            }
        }
    }
}
