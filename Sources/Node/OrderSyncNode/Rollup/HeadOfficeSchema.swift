import PostgresClient

/// Head office's schema `ordersync` (Docs/OPERATIONS.md, "Roll-up into head office"), created
/// when missing and migrated by version (`ordersync.schema_version`). Every table has
/// `store_id`, so that row-level security can restrict a shop's role to its own rows.
enum HeadOfficeSchema {
    /// The version this build writes.
    static let version: Int64 = 1

    /// Version 1.
    static let v1 = [
        """
        CREATE TABLE ordersync.journal (
            store_id text NOT NULL, lineage text NOT NULL, seq bigint NOT NULL, term bigint NOT NULL,
            op_id text NULL, origin text NOT NULL, operation smallint NOT NULL, message text NOT NULL,
            recorded_at timestamptz NOT NULL, hash bytea NOT NULL, rolling bytea NOT NULL,
            shipped_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (store_id, lineage, seq))
        """,
        """
        CREATE TABLE ordersync.orders (
            store_id text NOT NULL, uuid text NOT NULL, customer_name text, created text,
            shipping_method text, table_name text, table_size bigint, status text, note text,
            items jsonb, "order" jsonb NOT NULL, version bigint NOT NULL, removed boolean NOT NULL DEFAULT false,
            lineage text NOT NULL, seq bigint NOT NULL, updated_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (store_id, uuid))
        """,
        """
        CREATE TABLE ordersync.checkpoints (
            store_id text NOT NULL, lineage text NOT NULL, seq bigint NOT NULL, rolling bytea,
            updated_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (store_id, lineage))
        """,
        """
        CREATE TABLE ordersync.alarms (
            id bigserial PRIMARY KEY, store_id text NOT NULL, lineage text NOT NULL, seq bigint,
            kind text NOT NULL, detail text NOT NULL, at timestamptz NOT NULL DEFAULT now())
        """,
    ]

    /// Creates or migrates the schema unless it is at this build's version already (a shop's
    /// role needs no CREATE privilege then). Concurrent roll-ups serialise on an advisory lock.
    static func ensure(_ pg: PostgresConnection) throws {
        if try current(pg) == version { return }
        try pg.transaction {
            try pg.execute("SELECT pg_advisory_xact_lock(7248016)")
            try pg.execute("CREATE SCHEMA IF NOT EXISTS ordersync")
            try pg.execute("CREATE TABLE IF NOT EXISTS ordersync.schema_version (version int NOT NULL)")
            let found = try pg.execute("SELECT max(version) FROM ordersync.schema_version").int(0, 0) ?? 0
            guard found <= version else {
                throw RollupFailure.headOffice(
                    "head office's schema ordersync is at version \(found), newer than this build's \(version)")
            }
            if found < 1 { for statement in v1 { try pg.execute(statement) } }
            try pg.execute("DELETE FROM ordersync.schema_version")
            try pg.execute("INSERT INTO ordersync.schema_version (version) VALUES ($1::int)", [.int(version)])
        }
    }

    /// The schema's version, or nil when there is none.
    private static func current(_ pg: PostgresConnection) throws -> Int64? {
        guard try pg.execute("SELECT to_regclass('ordersync.schema_version') IS NOT NULL").text(0, 0) == "t" else { return nil }
        return try pg.execute("SELECT max(version) FROM ordersync.schema_version").int(0, 0)
    }
}
