import SyncCore

/// Refused operations, for operators: the newest `maxRejections` are kept.
extension OrderDatabase {
    /// How many rejections are kept; older ones are dropped as new ones arrive, so a device
    /// sending garbage all night cannot fill the disk.
    public static let maxRejections: Int64 = 10_000

    /// Records a rejection and returns it with its id.
    @discardableResult
    public func appendRejection(_ r: Rejection) throws -> Rejection {
        try requireWritable()
        return try transaction {
            try connection.execute(
                """
                INSERT INTO rejections (recorded_at_ms, origin, op_id, operation, order_uuid_key, order_uuid, code, message)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .integer(r.recordedAtMillis), .text(r.origin), .text(r.opId),
                    .integer(r.operation.map { Int64($0.rawValue) }), .text(r.orderUUID?.lowercased()), .text(r.orderUUID),
                    .text(r.code.rawValue), .text(r.message),
                ])
            let id = try connection.scalarInt("SELECT last_insert_rowid()") ?? 0
            try connection.execute("DELETE FROM rejections WHERE id <= ?", [.integer(id - Self.maxRejections)])
            var stored = r
            stored.id = id
            return stored
        }
    }

    /// The rejections recorded for operation `opId`, oldest first.
    public func rejections(opId: String) throws -> [Rejection] {
        try queryRejections("WHERE op_id = ? ORDER BY id", [.text(opId)])
    }

    /// Rejections with an id above `since`, oldest first, optionally of one order.
    public func rejections(since: Int64, orderUUID: String?, limit: Int) throws -> [Rejection] {
        let filter = orderUUID == nil ? "" : "AND order_uuid_key = ?"
        var values: [SQLiteValue] = [.integer(since)]
        if let u = orderUUID { values.append(.text(u.lowercased())) }
        values.append(.integer(Int64(limit)))
        return try queryRejections("WHERE id > ? \(filter) ORDER BY id LIMIT ?", values)
    }

    private func queryRejections(_ clauses: String, _ values: [SQLiteValue]) throws -> [Rejection] {
        try connection.withStatement(
            "SELECT id, recorded_at_ms, origin, op_id, operation, order_uuid, code, message FROM rejections \(clauses)", values
        ) { statement in
            var out: [Rejection] = []
            while try statement.step() {
                out.append(
                    Rejection(
                        id: statement.int64(0), recordedAtMillis: statement.int64(1), origin: statement.text(2),
                        opId: statement.optionalText(3), operation: statement.optionalInt64(4).flatMap { OperationKind(rawValue: Int($0)) },
                        orderUUID: statement.optionalText(5), code: WireErrorCode(rawValue: statement.text(6)) ?? .invalidMessage,
                        message: statement.text(7)))
            }
            return out
        }
    }
}
