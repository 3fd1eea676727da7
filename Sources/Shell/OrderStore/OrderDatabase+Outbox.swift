import JSON
import SyncCore

/// A slave's durable outbox: a local change and its outbox entry are written in one transaction
/// (`synchronous=FULL`), and an entry leaves only when the master has answered for it.
extension OrderDatabase {
    /// Appends an entry; returns it with its position.
    @discardableResult
    public func appendOutbox(_ entry: OutboxEntry) throws -> OutboxEntry {
        try requireWritable()
        let keys = JSONValue.array(entry.orderKeys.map { .string($0) }).serialized()
        try connection.execute(
            "INSERT INTO outbox (op_id, message, order_keys, created_ms, base_seq) VALUES (?, ?, ?, ?, ?)",
            [.text(entry.opId), .utf8(entry.message), .text(keys), .integer(entry.createdMillis), .integer(entry.baseSeq)])
        var stored = entry
        stored.position = try connection.scalarInt("SELECT last_insert_rowid()") ?? 0
        return stored
    }

    /// Puts `entries` in front of every entry the outbox holds, in their order (positions below
    /// the lowest; an empty outbox takes them as appended).
    public func prependOutbox(_ entries: [OutboxEntry]) throws {
        guard !entries.isEmpty else { return }
        guard let lowest = try connection.scalarInt("SELECT min(position) FROM outbox") else {
            for e in entries { try appendOutbox(e) }
            return
        }
        let keys = entries.map { JSONValue.array($0.orderKeys.map { .string($0) }).serialized() }
        for (i, e) in entries.enumerated() {
            try connection.execute(
                "INSERT INTO outbox (position, op_id, message, order_keys, created_ms, base_seq) VALUES (?, ?, ?, ?, ?, ?)",
                [
                    .integer(lowest - Int64(entries.count - i)), .text(e.opId), .utf8(e.message), .text(keys[i]),
                    .integer(e.createdMillis), .integer(e.baseSeq),
                ])
        }
    }

    /// Every entry, oldest first.
    public func outboxEntries() throws -> [OutboxEntry] {
        try connection.withStatement("SELECT position, op_id, message, order_keys, created_ms, base_seq FROM outbox ORDER BY position") {
            statement in
            var out: [OutboxEntry] = []
            while try statement.step() {
                let keys = (try? JSONParser.parse(statement.text(3)).arrayValue?.compactMap(\.stringValue)) ?? nil
                out.append(
                    OutboxEntry(
                        position: statement.int64(0), opId: statement.text(1), message: statement.utf8(2),
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
            try connection.execute(
                "INSERT OR REPLACE INTO sync_errors (uuid_key, code, message) VALUES (?, ?, ?)",
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

/// A slave's memory of the master's answers to its own operations (the newest `keep`).
extension OrderDatabase {
    /// Keeps `answer` (replacing an older one for the same id) and forgets all but the newest
    /// `keep` answers.
    public func recordAnswered(_ answer: AnsweredOperation, keep: Int) throws {
        try requireWritable()
        let applied = JSONValue.array(answer.applied.map { .object($0.json) }).serialized()
        let errors = JSONValue.array(
            answer.errors.map { e in
                var o = JSONObject()
                o["code"] = .string(e.code.rawValue)
                o["message"] = .string(e.message)
                if let u = e.uuid { o["uuid"] = .string(u) }
                if let i = e.index { o["index"] = .int(Int64(i)) }
                if let c = e.current { o["current"] = .object(c.json) }
                return .object(o)
            }
        ).serialized()
        try connection.execute("DELETE FROM answered_ops WHERE op_id = ?", [.text(answer.opId)])
        try connection.execute(
            "INSERT INTO answered_ops (op_id, seq, applied_json, errors_json, answered_ms) VALUES (?, ?, ?, ?, ?)",
            [
                .text(answer.opId), answer.seq.map { .integer($0) } ?? .null, .text(applied), .text(errors),
                .integer(answer.answeredMillis),
            ])
        try connection.execute(
            "DELETE FROM answered_ops WHERE position <= (SELECT max(position) FROM answered_ops) - ?",
            [.integer(Int64(keep))])
    }

    /// The kept answer to `opId`, if any.
    public func answeredOperation(opId: String) throws -> AnsweredOperation? {
        let row: (Int64?, String, String, Int64)? = try connection.withStatement(
            "SELECT seq, applied_json, errors_json, answered_ms FROM answered_ops WHERE op_id = ?", [.text(opId)]
        ) { statement in
            guard try statement.step() else { return nil }
            return (statement.isNull(0) ? nil : statement.int64(0), statement.text(1), statement.text(2), statement.int64(3))
        }
        guard let (seq, appliedText, errorsText, at) = row else { return nil }
        do {
            let applied = try (JSONParser.parse(appliedText).arrayValue ?? []).map { v -> Order in
                guard let o = v.objectValue else {
                    throw StoreError(kind: .corruptRow, message: "answered_ops.applied_json of \(opId) holds a non-object", path: path)
                }
                return try OrderFields.storedOrder(from: o, index: nil)
            }
            let errors = try (JSONParser.parse(errorsText).arrayValue ?? []).compactMap { v -> WireError? in
                guard let o = v.objectValue, let c = o["code"]?.stringValue else { return nil }
                // Rows written by earlier builds have no `index` or `current`.
                return WireError(
                    WireErrorCode(rawValue: c) ?? .invalidMessage, o["message"]?.stringValue ?? "", uuid: o["uuid"]?.stringValue,
                    index: o["index"]?.intValue.map { Int($0) },
                    current: try o["current"]?.objectValue.map { try OrderFields.storedOrder(from: $0, index: nil) })
            }
            return AnsweredOperation(opId: opId, seq: seq, applied: applied, errors: errors, answeredMillis: at)
        } catch let e as StoreError {
            throw e
        } catch {
            throw StoreError(kind: .corruptRow, message: "answered_ops row of \(opId) is not readable: \(error)", path: path)
        }
    }
}
