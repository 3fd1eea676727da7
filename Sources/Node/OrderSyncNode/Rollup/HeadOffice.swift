import JSON
import PostgresClient
import RollupCore

/// Head office's PostgreSQL as one shop's roll-up uses it: the checkpoint of (store, lineage),
/// each batch in one transaction, alarms. Every value goes as a parameter.
final class HeadOffice {
    /// How a batch went.
    enum ShipOutcome: Equatable {
        /// Committed: the checkpoint is the batch's last seq.
        case committed
        /// Head office holds another entry at `seq`; nothing of the batch was kept.
        case conflict(seq: Int64)
        /// The checkpoint is no longer where this roll-up read it (another roll-up of the same
        /// store moved it): nothing was kept; read it again.
        case moved
    }

    let pg: PostgresConnection
    private let store: String
    private let lineage: String
    /// Whether this session's staging tables (`stagingTables`) exist yet.
    private var staged = false

    /// Connects to `url` and makes sure the schema is there; `interrupt` can break any of its
    /// calls from another thread. Throws `RollupFailure`.
    init(url: String, storeId: String, lineage: String, interrupt: PostgresInterrupt? = nil) throws(RollupFailure) {
        store = storeId
        self.lineage = lineage
        do {
            pg = try PostgresConnection(url: url, applicationName: "ordersync-rollup", interrupt: interrupt)
        } catch {
            throw error.kind == .configuration ? .configuration(error.message) : .unreachable(error.description)
        }
        do { try HeadOfficeSchema.ensure(pg) } catch { throw Self.failure(error) }
    }

    /// A `PostgresError` as the roll-up's failure: a dead link is `unreachable`, a refused
    /// statement `headOffice`.
    static func failure(_ error: Error) -> RollupFailure {
        if let f = error as? RollupFailure { return f }
        if let e = error as? PostgresError {
            return e.kind == .query ? .headOffice(e.description) : .unreachable(e.description)
        }
        return .headOffice("\(error)")
    }

    /// The checkpoint (seq and rolling hash; seq 0 with the lineage's start value when none),
    /// created at 0 when missing.
    func checkpoint() throws -> (seq: Int64, rolling: [UInt8]) {
        try pg.execute(
            "INSERT INTO ordersync.checkpoints (store_id, lineage, seq) VALUES ($1, $2, 0) ON CONFLICT DO NOTHING",
            [.text(store), .text(lineage)])
        let rows = try pg.execute(
            "SELECT seq, rolling FROM ordersync.checkpoints WHERE store_id = $1 AND lineage = $2", [.text(store), .text(lineage)])
        let seq = rows.int(0, 0) ?? 0
        if seq == 0 { return (0, RollupHash.start(storeId: store, lineage: lineage)) }
        guard let rolling = rows.bytes(0, 1), rolling.count == 32 else {
            throw RollupFailure.headOffice("head office's checkpoint at seq \(seq) has no rolling hash")
        }
        return (seq, rolling)
    }

    /// Ships `shipment` (after the checkpoint at `after`) in one transaction: journal rows that
    /// ignore a repeat, a check that every row of the range has this batch's hash, the orders
    /// (only a higher version), and the checkpoint.
    func ship(_ shipment: RollupShipment, after: Int64) throws -> ShipOutcome {
        let key: [PostgresValue] = [.text(store), .text(lineage)]
        let batch = shipment.batch
        var outcome = ShipOutcome.committed
        if !staged {
            for statement in Self.stagingTables { try pg.execute(statement) }
            staged = true
        }
        try pg.execute("BEGIN")
        do {
            let current = try pg.execute(
                "SELECT seq FROM ordersync.checkpoints WHERE store_id = $1 AND lineage = $2 FOR UPDATE", key
            ).int(0, 0)
            if current != after {
                outcome = .moved
            } else {
                let inserted = try insertJournal(shipment)
                // Every row new (none of the range was there): each holds this batch's hash, so
                // the check can only pass; a repeat (a batch shipped again after a crash) is checked.
                if inserted < batch.rows.count, let seq = try firstMismatch(batch) {
                    outcome = .conflict(seq: seq)
                } else {
                    try upsertOrders(shipment)
                    try pg.execute(
                        "UPDATE ordersync.checkpoints SET seq = $3, rolling = $4, updated_at = now() WHERE store_id = $1 AND lineage = $2",
                        key + [.int(batch.lastSeq), .bytes(batch.lastRolling)])
                }
            }
            try pg.execute(outcome == .committed ? "COMMIT" : "ROLLBACK")
        } catch {
            if pg.isConnected { _ = try? pg.execute("ROLLBACK") }
            throw error
        }
        return outcome
    }

    /// This session's staging tables, which each batch's rows are copied into (`COPY … FROM
    /// STDIN`, the cheapest way into PostgreSQL) before one `INSERT … SELECT` takes them into
    /// head office's tables with `ON CONFLICT`, which COPY has not. Temporary: never written to
    /// the WAL, seen by this session only, emptied at each commit ("ON COMMIT DELETE ROWS: All
    /// rows in the temporary table will be deleted at the end of each transaction block"), and
    /// by a rollback like any row.
    static let stagingTables = [
        """
        CREATE TEMPORARY TABLE IF NOT EXISTS rollup_journal (seq bigint, term bigint, op_id text, origin text,
            operation smallint, message text, ms bigint, hash bytea, rolling bytea) ON COMMIT DELETE ROWS
        """,
        """
        CREATE TEMPORARY TABLE IF NOT EXISTS rollup_orders (uuid text, customer_name text, created text,
            shipping_method text, table_name text, table_size bigint, status text, note text, o jsonb, version bigint,
            removed boolean, seq bigint) ON COMMIT DELETE ROWS
        """,
    ]

    /// The batch's journal rows: copied into the staging table, then inserted in one statement;
    /// a row already there is left as it is. Returns how many rows were inserted ("the count is
    /// the number of rows inserted or updated": a row skipped by `ON CONFLICT DO NOTHING` is not
    /// counted).
    private func insertJournal(_ shipment: RollupShipment) throws -> Int {
        try pg.copyIn("COPY pg_temp.rollup_journal FROM STDIN", shipment.journalRows)
        return try pg.execute(
            """
            INSERT INTO ordersync.journal (store_id, lineage, seq, term, op_id, origin, operation, message, recorded_at, hash, rolling)
            SELECT $1, $2, r.seq, r.term, r.op_id, r.origin, r.operation, r.message,
                timestamptz 'epoch' + r.ms * interval '1 millisecond', r.hash, r.rolling
            FROM pg_temp.rollup_journal AS r
            ON CONFLICT DO NOTHING
            """,
            [.text(store), .text(lineage)]
        ).affected
    }

    /// The first seq of the batch whose row in head office has another hash (a row that was
    /// there before with other content), or nil.
    private func firstMismatch(_ batch: RollupBatch) throws -> Int64? {
        let rows = try pg.execute(
            "SELECT seq, hash FROM ordersync.journal WHERE store_id = $1 AND lineage = $2 AND seq BETWEEN $3 AND $4 ORDER BY seq",
            [.text(store), .text(lineage), .int(batch.firstSeq), .int(batch.lastSeq)])
        var held: [Int64: [UInt8]] = [:]
        for i in 0..<rows.rows.count { if let s = rows.int(i, 0) { held[s] = rows.bytes(i, 1) } }
        return batch.rows.first { held[$0.entry.seq] != $0.hash }?.entry.seq
    }

    /// The batch's orders: copied into the staging table (each order's JSON parsed into `jsonb`
    /// once, its `items` taken from it), then created or removed ones in one statement each: a
    /// row changes only for a higher version, or for a removal.
    private func upsertOrders(_ shipment: RollupShipment) throws {
        guard shipment.orderRows.rows > 0 else { return }
        try pg.copyIn("COPY pg_temp.rollup_orders FROM STDIN", shipment.orderRows)
        for (removed, count) in [(false, shipment.liveOrders), (true, shipment.removedOrders)] where count > 0 {
            let update =
                removed
                ? "removed = true, version = GREATEST(o.version, excluded.version), lineage = excluded.lineage, "
                    + "seq = excluded.seq, updated_at = now() WHERE NOT o.removed"
                : "customer_name = excluded.customer_name, created = excluded.created, shipping_method = excluded.shipping_method, "
                    + "table_name = excluded.table_name, table_size = excluded.table_size, status = excluded.status, "
                    + "note = excluded.note, items = excluded.items, \"order\" = excluded.\"order\", version = excluded.version, "
                    + "removed = false, lineage = excluded.lineage, seq = excluded.seq, updated_at = now() "
                    + "WHERE excluded.version > o.version"
            try pg.execute(
                """
                INSERT INTO ordersync.orders AS o (store_id, uuid, customer_name, created, shipping_method, table_name,
                    table_size, status, note, items, "order", version, removed, lineage, seq)
                SELECT $1, r.uuid, r.customer_name, r.created, r.shipping_method, r.table_name, r.table_size, r.status,
                    r.note, r.o -> 'items', r.o, r.version, r.removed, $2, r.seq
                FROM pg_temp.rollup_orders AS r WHERE r.removed = $3
                ON CONFLICT (store_id, uuid) DO UPDATE SET
                """ + " " + update,
                [.text(store), .text(lineage), .bool(removed)])
        }
    }

    /// Records an alarm (`conflict` or `gap`) in its own transaction.
    func alarm(kind: String, seq: Int64?, detail: String) throws {
        try pg.execute(
            "INSERT INTO ordersync.alarms (store_id, lineage, seq, kind, detail) VALUES ($1, $2, $3, $4, $5)",
            [.text(store), .text(lineage), .int(seq), .text(kind), .text(detail)])
    }

    /// Up to `limit` journal rows of this store and lineage with seq in `after+1 ... through`, as
    /// entries with their stored hash and rolling hash (for verify).
    func journalRows(after: Int64, through: Int64, limit: Int) throws -> [(entry: RollupEntry, hash: [UInt8], rolling: [UInt8])] {
        let rows = try pg.execute(
            """
            SELECT seq, term, op_id, origin, operation, message, (extract(epoch FROM recorded_at) * 1000)::bigint, hash, rolling
            FROM ordersync.journal WHERE store_id = $1 AND lineage = $2 AND seq > $3 AND seq <= $4 ORDER BY seq LIMIT $5
            """, [.text(store), .text(lineage), .int(after), .int(through), .int(Int64(limit))])
        return (0..<rows.rows.count).map { i in
            let entry = RollupEntry(
                seq: rows.int(i, 0) ?? 0, term: rows.int(i, 1) ?? 0, opId: rows.text(i, 2), origin: rows.text(i, 3) ?? "",
                operation: Int(rows.int(i, 4) ?? 0), message: Array((rows.text(i, 5) ?? "").utf8),
                recordedAtMillis: rows.int(i, 6) ?? 0)
            return (entry, rows.bytes(i, 7) ?? [], rows.bytes(i, 8) ?? [])
        }
    }

    /// The lowest seq of a row above `seq`, if any.
    func firstRow(above seq: Int64) throws -> Int64? {
        try pg.execute(
            "SELECT min(seq) FROM ordersync.journal WHERE store_id = $1 AND lineage = $2 AND seq > $3",
            [.text(store), .text(lineage), .int(seq)]
        ).int(0, 0)
    }

    /// The checkpoint as it is, without creating it: nil when head office has none.
    func existingCheckpoint() throws -> (seq: Int64, rolling: [UInt8]?)? {
        let rows = try pg.execute(
            "SELECT seq, rolling FROM ordersync.checkpoints WHERE store_id = $1 AND lineage = $2", [.text(store), .text(lineage)])
        guard !rows.rows.isEmpty, let seq = rows.int(0, 0) else { return nil }
        return (seq, rows.bytes(0, 1))
    }

    func close() { pg.close() }
}

/// JSON text of an object, for a `jsonb` parameter.
enum JSONValueText {
    static func object(_ o: JSON.JSONObject) -> String { JSON.JSONValue.object(o).serialized() }
}
