import SyncCore

/// The master's record of its slaves, and the tombstones of removed orders.
extension OrderDatabase {
    /// Records (or refreshes) a terminal.
    public func saveTerminal(_ t: KnownTerminal) throws {
        try requireWritable()
        try connection.execute(
            """
            INSERT INTO terminals (terminal_id, name, address, acked_seq, last_seen_ms, outbox) VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT (terminal_id) DO UPDATE SET name = excluded.name, address = excluded.address,
                acked_seq = excluded.acked_seq, last_seen_ms = excluded.last_seen_ms,
                outbox = coalesce(excluded.outbox, terminals.outbox)
            """,
            [
                .text(t.id), .text(t.name), .text(t.address), .integer(t.ackedSeq), .integer(t.lastSeenMillis),
                t.outbox.map { .integer(Int64($0)) } ?? .null,
            ])
    }

    /// Every known terminal, by name.
    public func knownTerminals() throws -> [KnownTerminal] {
        try connection.withStatement(
            "SELECT terminal_id, name, address, acked_seq, last_seen_ms, outbox FROM terminals ORDER BY name, terminal_id"
        ) { s in
            var out: [KnownTerminal] = []
            while try s.step() {
                out.append(
                    KnownTerminal(
                        id: s.text(0), name: s.text(1), address: s.text(2), ackedSeq: s.int64(3), lastSeenMillis: s.int64(4),
                        outbox: s.isNull(5) ? nil : Int(s.int64(5))))
            }
            return out
        }
    }

    /// Forgets terminals not heard from since `cutoffMillis` (they get a snapshot if they return).
    @discardableResult
    public func forgetTerminals(lastSeenBefore cutoffMillis: Int64) throws -> Int {
        try requireWritable()
        return try connection.execute("DELETE FROM terminals WHERE last_seen_ms < ?", [.integer(cutoffMillis)])
    }

    /// Records that the order was removed by operation `seq` (inside the caller's transaction).
    public func addTombstone(uuid: String, seq: Int64) throws {
        try requireWritable()
        try connection.execute(
            "INSERT OR REPLACE INTO tombstones (uuid_key, seq) VALUES (?, ?)", [.text(uuid.lowercased()), .integer(seq)])
    }

    /// Whether the order was removed (and its tombstone not compacted yet).
    public func hasTombstone(uuid: String) throws -> Bool {
        try connection.withStatement("SELECT 1 FROM tombstones WHERE uuid_key = ?", [.text(uuid.lowercased())]) { try $0.step() }
    }

    /// Drops tombstones at or below `seq`; returns how many.
    @discardableResult
    public func compactTombstones(through seq: Int64) throws -> Int {
        try requireWritable()
        return try connection.execute("DELETE FROM tombstones WHERE seq <= ?", [.integer(seq)])
    }

    /// Number of tombstones.
    public func tombstoneCount() throws -> Int {
        Int(try connection.scalarInt("SELECT count(*) FROM tombstones") ?? 0)
    }
}
