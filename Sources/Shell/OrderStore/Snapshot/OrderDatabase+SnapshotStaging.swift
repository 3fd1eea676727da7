import SyncCore

/// A snapshot received by a replica, staged part by part (Docs/PROTOCOL.md 4.2.2): each part's
/// orders go into `snapshot_orders`, a table of their own, as they arrive, so the replica's
/// `orders` stay as they were (readable, and what a lost link leaves) until the last part. The
/// switch then copies the staged table over `orders` and drops it, in SQL only: inside an open
/// group it runs on the thread that commits the group, just before its COMMIT
/// (`DetachedCommit`), so the loop that owns the connection never waits for a million rows.
/// A slave commits the groups that only stage without a sync (`SynchronousLevel.normal`), so
/// what is staged may be lost at a power cut: the table is dropped when the store opens.
extension OrderDatabase {
    /// The staging table; its columns are `orders`' (copied by name at the switch).
    static let stagingTable = "snapshot_orders"

    /// The statements that switch the replica to the staged snapshot, in order: the whole
    /// table at once ("the truncate optimization": `DELETE` without `WHERE` on a table without
    /// triggers), the staged rows in key order (the order of `orders`' primary key), the table
    /// dropped.
    static let stagedSwitchStatements = [
        "DELETE FROM orders",
        """
        INSERT INTO orders (uuid_key, uuid, customer_name, created_text, created_ms, created_offset_min,
                            shipping_method, table_name, table_size, extra_json, version, status, items_json, note)
        SELECT uuid_key, uuid, customer_name, created_text, created_ms, created_offset_min,
               shipping_method, table_name, table_size, extra_json, version, status, items_json, note
        FROM \(stagingTable) ORDER BY uuid_key
        """,
        "DROP TABLE \(stagingTable)",
    ]

    /// Adds one part's orders to the staged snapshot; `first` starts it anew (what an earlier,
    /// interrupted snapshot staged is dropped). An order staged twice keeps its last copy, as
    /// a snapshot applied whole did. Atomic (a savepoint inside the caller's transaction).
    public func stageSnapshotOrders(_ orders: [Order], first: Bool) throws {
        try transaction {
            if first {
                try connection.executeOnce("DROP TABLE IF EXISTS \(Self.stagingTable)")
                try connection.executeOnce(
                    """
                    CREATE TABLE \(Self.stagingTable) (
                        uuid_key TEXT PRIMARY KEY NOT NULL, uuid, customer_name, created_text, created_ms,
                        created_offset_min, shipping_method, table_name, table_size, extra_json, version, status,
                        items_json, note
                    ) WITHOUT ROWID
                    """)
            }
            for order in orders { try stageOrder(order) }
        }
    }

    /// Stages `order` (replacing a staged copy of it).
    private func stageOrder(_ order: Order) throws {
        try connection.execute(
            """
            INSERT OR REPLACE INTO \(Self.stagingTable) (uuid_key, uuid, customer_name, created_text, created_ms,
                created_offset_min, shipping_method, table_name, table_size, extra_json, version, status, items_json, note)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, Self.values(of: order))
    }

    /// The staged copy of the order with this UUID (any case), or nil.
    public func stagedOrder(uuid: String) throws -> Order? {
        try connection.withStatement(
            "SELECT \(Self.orderColumns) FROM \(Self.stagingTable) WHERE uuid_key = ?",
            [.text(uuid.lowercased())]
        ) { statement in
            try statement.step() ? try decodeOrder(statement) : nil
        }
    }

    /// How many orders are staged (0 when nothing is).
    public func stagedOrderCount() throws -> Int {
        guard try connection.scalarInt("SELECT count(*) FROM sqlite_schema WHERE name = ?", [.text(Self.stagingTable)]) == 1
        else { return 0 }
        return Int(try connection.scalarInt("SELECT count(*) FROM \(Self.stagingTable)") ?? 0)
    }

    /// The replica becomes the staged snapshot with `changes` on top (the local changes still
    /// waiting in the outbox, re-planned on it), and the staging table goes. `changes` go into
    /// the staged table now; when no group is open the copy runs at once, inside the caller's
    /// transaction. In a group it does not: the caller arms it with `switchAtGroupCommit()` once
    /// the rest of its transaction succeeded.
    public func switchToStagedSnapshot(changes: [OrderChange]) throws {
        try transaction {
            for change in changes {
                switch change {
                case .insert(let o), .update(let o): try stageOrder(o)
                case .delete(let o):
                    try connection.execute("DELETE FROM \(Self.stagingTable) WHERE uuid_key = ?", [.text(o.key)])
                }
            }
            guard !isInGroup else { return }
            for sql in Self.stagedSwitchStatements { try connection.executeOnce(sql) }
        }
    }

    /// In an open group: the staged snapshot replaces `orders` just before the group's COMMIT,
    /// on the committing thread, in its transaction (a failure rolls the whole group back). Until
    /// then `orders` must not be written in this group: the copy would replace what was.
    public func switchAtGroupCommit() {
        precondition(isInGroup, "a staged switch armed outside a group")
        beforeGroupCommit = Self.stagedSwitchStatements
    }

    /// True while a staged switch waits for the open group's COMMIT.
    public var switchesAtGroupCommit: Bool { !beforeGroupCommit.isEmpty }
}
