/// The database schema as numbered migrations, and the code that applies them.
///
/// The schema version lives in `PRAGMA user_version` ("The user_version pragma will get or set
/// the value of the user-version integer at offset 60 in the database header. The user-version
/// is an integer that is available to applications to use however they want. SQLite makes no
/// use of the user-version itself."). Migration N brings a file from version N-1 to N, in one
/// transaction together with the version change, so a crash leaves either N-1 or N.
/// Migrations are only ever appended; a released one is never edited.
enum Schema {
    /// One step of the schema.
    struct Migration {
        /// The `user_version` after this step.
        let version: Int64
        /// What it does, for errors.
        let name: String
        /// DDL statements, run in order. They contain no values from outside this file.
        let statements: [String]
    }

    /// Every migration, in order; `version` is 1, 2, 3, ...
    static let migrations: [Migration] = [
        Migration(
            version: 1, name: "orders, metadata and journal",
            statements: [
                """
                CREATE TABLE metadata (
                    key TEXT PRIMARY KEY NOT NULL,
                    value TEXT NOT NULL
                ) WITHOUT ROWID
                """,
                """
                CREATE TABLE orders (
                    uuid_key TEXT PRIMARY KEY NOT NULL,
                    uuid TEXT NOT NULL,
                    customer_name TEXT NOT NULL,
                    created_text TEXT NOT NULL,
                    created_ms INTEGER NOT NULL,
                    created_offset_min INTEGER NOT NULL,
                    shipping_method TEXT,
                    table_name TEXT,
                    table_size INTEGER,
                    extra_json TEXT NOT NULL DEFAULT '{}',
                    version INTEGER NOT NULL
                ) WITHOUT ROWID
                """,
                "CREATE INDEX orders_by_created ON orders (created_ms, uuid_key)",
                // "If a table contains a column of type INTEGER PRIMARY KEY, then that column becomes
                // an alias for the ROWID": the caller assigns `seq`, SQLite never invents one.
                """
                CREATE TABLE journal (
                    seq INTEGER PRIMARY KEY,
                    op_id TEXT UNIQUE,
                    origin TEXT NOT NULL,
                    operation INTEGER NOT NULL CHECK (operation IN (0, 1, 2)),
                    order_uuids TEXT NOT NULL,
                    message TEXT NOT NULL,
                    recorded_at_ms INTEGER NOT NULL
                )
                """,
                // One row per (order, journal entry), so the history of one order is an index lookup.
                """
                CREATE TABLE journal_orders (
                    uuid_key TEXT NOT NULL,
                    seq INTEGER NOT NULL REFERENCES journal (seq) ON DELETE CASCADE,
                    PRIMARY KEY (uuid_key, seq)
                ) WITHOUT ROWID
                """,
                "CREATE INDEX journal_orders_by_seq ON journal_orders (seq)",
                // The database epoch: a random (version 4) UUID made once, with the database. A file
                // made from scratch gets a new one; a copy of a file keeps it.
                """
                INSERT INTO metadata (key, value) VALUES ('database.epoch',
                    lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4' ||
                    substr(lower(hex(randomblob(2))), 2) || '-' ||
                    substr('89ab', 1 + (abs(random()) % 4), 1) || substr(lower(hex(randomblob(2))), 2) || '-' ||
                    lower(hex(randomblob(6))))
                """,
            ]),
        Migration(
            version: 2, name: "order status, line items and note",
            statements: [
                "ALTER TABLE orders ADD COLUMN status TEXT NOT NULL DEFAULT 'open'",
                "ALTER TABLE orders ADD COLUMN items_json TEXT",
                "ALTER TABLE orders ADD COLUMN note TEXT",
                "CREATE INDEX orders_by_status ON orders (status, created_ms, uuid_key)",
            ]),
        Migration(
            version: 3, name: "rejections",
            statements: [
                """
                CREATE TABLE rejections (
                    id INTEGER PRIMARY KEY,
                    recorded_at_ms INTEGER NOT NULL,
                    origin TEXT NOT NULL,
                    op_id TEXT,
                    operation INTEGER,
                    order_uuid_key TEXT,
                    order_uuid TEXT,
                    code TEXT NOT NULL,
                    message TEXT NOT NULL
                )
                """,
                "CREATE INDEX rejections_by_order ON rejections (order_uuid_key, id)",
            ]),
        Migration(
            version: 4, name: "slave outbox",
            statements: [
                // A slave's local changes not yet answered by the master, in the order they were made.
                """
                CREATE TABLE outbox (
                    position INTEGER PRIMARY KEY AUTOINCREMENT,
                    op_id TEXT NOT NULL UNIQUE,
                    message TEXT NOT NULL,
                    order_keys TEXT NOT NULL,
                    created_ms INTEGER NOT NULL
                )
                """
            ]),
        Migration(
            version: 5, name: "known terminals and tombstones",
            statements: [
                // Every slave that ever said hello, with how far it got: the master's status lists
                // them even while they are away, and tombstones are kept until all have passed them.
                """
                CREATE TABLE terminals (
                    terminal_id TEXT PRIMARY KEY NOT NULL,
                    name TEXT NOT NULL,
                    address TEXT NOT NULL,
                    acked_seq INTEGER NOT NULL,
                    last_seen_ms INTEGER NOT NULL
                ) WITHOUT ROWID
                """,
                // Removed orders: a late or replayed Create of one is refused.
                """
                CREATE TABLE tombstones (
                    uuid_key TEXT PRIMARY KEY NOT NULL,
                    seq INTEGER NOT NULL
                ) WITHOUT ROWID
                """,
                "INSERT OR IGNORE INTO tombstones (uuid_key, seq) SELECT o.uuid_key, max(o.seq) FROM journal_orders o JOIN journal j ON j.seq = o.seq WHERE j.operation = 2 GROUP BY o.uuid_key",
            ]),
        Migration(
            version: 6, name: "sync errors and outbox base sequence on a slave",
            statements: [
                // The master's last refusal of a local change, per order, shown by the local API
                // until the next local change to that order (it survives a restart).
                """
                CREATE TABLE sync_errors (
                    uuid_key TEXT PRIMARY KEY NOT NULL,
                    code TEXT NOT NULL,
                    message TEXT NOT NULL
                ) WITHOUT ROWID
                """,
                // The replica's sequence when an outbox entry was made: acks stay at or below it
                // while the entry waits (0 for entries made before: the most cautious value).
                "ALTER TABLE outbox ADD COLUMN base_seq INTEGER NOT NULL DEFAULT 0",
                // The master looks up the refusals of an operation id for every operation it applies.
                "CREATE INDEX rejections_by_op ON rejections (op_id)",
            ]),
        Migration(
            version: 7, name: "answered operations on a slave",
            statements: [
                // The master's answer to each of this terminal's own operations (the newest ones): a
                // retry of an operation id through the local API gets it again, nothing is re-applied.
                """
                CREATE TABLE answered_ops (
                    position INTEGER PRIMARY KEY AUTOINCREMENT,
                    op_id TEXT NOT NULL UNIQUE,
                    seq INTEGER,
                    applied_json TEXT NOT NULL,
                    errors_json TEXT NOT NULL,
                    answered_ms INTEGER NOT NULL
                )
                """
            ]),
        Migration(
            version: 8, name: "paired terminals",
            statements: [
                // The terminals the master paired with (Docs/SECURITY.md): only these may connect,
                // identified by their static public key. A revoked one keeps its row (and its
                // `revoked_ms`) so its key stays refused until it pairs again.
                """
                CREATE TABLE paired_terminals (
                    node_id TEXT PRIMARY KEY NOT NULL,
                    public_key TEXT NOT NULL UNIQUE CHECK (length(public_key) = 64),
                    name TEXT NOT NULL,
                    paired_ms INTEGER NOT NULL,
                    revoked_ms INTEGER
                ) WITHOUT ROWID
                """,
                "CREATE INDEX paired_terminals_by_name ON paired_terminals (name)",
                // Before pairing, any peer could name itself in its hello and become a known
                // terminal: those rows are keyed by ids nobody proved, so they go.
                "DELETE FROM terminals",
            ]),
        Migration(
            version: 9, name: "answers to local API operations",
            statements: [
                // The answer the local API gave to an operation sent with an `opId` (the newest
                // ones), byte for byte: the same `opId` sent again gets it again.
                """
                CREATE TABLE IF NOT EXISTS api_answers (
                    position INTEGER PRIMARY KEY AUTOINCREMENT,
                    op_id TEXT NOT NULL UNIQUE,
                    status INTEGER NOT NULL,
                    body TEXT NOT NULL,
                    answered_ms INTEGER NOT NULL
                )
                """
            ]),
        Migration(
            version: 10, name: "change feed on a slave",
            statements: [
                // A slave's change feed (Docs/API.md, "Change feed"): the master's changes as
                // applied here, local changes while pending and their outcome, snapshots. "If the
                // AUTOINCREMENT keyword appears after INTEGER PRIMARY KEY, that changes the
                // automatic ROWID assignment algorithm to prevent the reuse of ROWIDs over the
                // lifetime of the database": a cursor never names two changes, even after pruning.
                """
                CREATE TABLE IF NOT EXISTS feed (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    change_json TEXT NOT NULL,
                    recorded_ms INTEGER NOT NULL
                )
                """
            ]),
        Migration(
            version: 11, name: "outbox of each known terminal",
            statements: [
                // How many changes a slave's outbox held when it last said (hello, ack): the
                // master's status and dashboard show it per terminal. NULL: it never said.
                "ALTER TABLE terminals ADD COLUMN outbox INTEGER"
            ]),
        Migration(
            version: 12, name: "orders StorePOS apps hold that the store does not",
            statements: [
                // One row per uuid (any case) a StorePOS app named in an Update or Remove the
                // store could not apply (`not_found`): the uuid as the app wrote it, the order as
                // it last sent it, and what the operator did (seen, adopted, cleared).
                """
                CREATE TABLE storepos_foreign_orders (
                    uuid_key TEXT PRIMARY KEY,
                    uuid TEXT NOT NULL,
                    address TEXT NOT NULL,
                    content TEXT NOT NULL,
                    first_seen_ms INTEGER NOT NULL,
                    last_seen_ms INTEGER NOT NULL,
                    seen INTEGER NOT NULL,
                    state TEXT NOT NULL
                ) WITHOUT ROWID
                """
            ]),
        Migration(
            version: 13, name: "terms and standby copy",
            statements: [
                // The term of the master that applied each entry (Docs/PROTOCOL.md 7): every entry
                // made before is term 1, as every store was.
                "ALTER TABLE journal ADD COLUMN term INTEGER NOT NULL DEFAULT 1",
                // Whether a paired terminal votes in a promotion (a handheld does not).
                "ALTER TABLE paired_terminals ADD COLUMN voter INTEGER NOT NULL DEFAULT 1",
            ]),
        Migration(
            version: 14, name: "member numbers",
            statements: [
                // Each member's number (`TermBallot`, Docs/PROTOCOL.md 7.16): the terms it may
                // bid. Unique within the store; NULL while a standby has not been told it.
                "ALTER TABLE paired_terminals ADD COLUMN number INTEGER",
                "CREATE UNIQUE INDEX paired_terminals_by_number ON paired_terminals (number)",
                // A master's store numbers its paired terminals 1, 2, ... by pairing time, then
                // node id (revoked ones too: a number is never given twice); the master takes the
                // next one when it starts (`member.number`). A standby's numbers come from its
                // master's `members`, never from here: two standbys must not guess.
                """
                UPDATE paired_terminals SET number = (
                    SELECT COUNT(*) FROM paired_terminals AS p
                    WHERE p.paired_ms < paired_terminals.paired_ms
                        OR (p.paired_ms = paired_terminals.paired_ms AND p.node_id <= paired_terminals.node_id))
                WHERE (SELECT value FROM metadata WHERE key = 'node.role') = 'master'
                """,
            ]),
        Migration(
            version: 15, name: "operation ids below a snapshot",
            statements: [
                // The operation ids a standby's snapshot covers, with the seq each was applied at
                // (Docs/PROTOCOL.md 7.2): its journal holds none below the snapshot's base, so a
                // node promoted from it answers a retry of one of these instead of applying it
                // again. Bounded with the journal (`applied_op_ids_by_seq` serves the cut). IF NOT
                // EXISTS: a file whose version was set back without dropping it migrates again.
                """
                CREATE TABLE IF NOT EXISTS applied_op_ids (
                    op_id TEXT PRIMARY KEY,
                    seq INTEGER NOT NULL
                ) WITHOUT ROWID
                """,
                "CREATE INDEX IF NOT EXISTS applied_op_ids_by_seq ON applied_op_ids (seq)",
            ]),
    ]

    /// The schema version this build writes and reads.
    static var currentVersion: Int64 { migrations.last?.version ?? 0 }

    /// Reads `PRAGMA user_version`.
    static func version(of connection: SQLiteConnection) throws -> Int64 {
        try connection.scalarInt("PRAGMA user_version") ?? 0
    }

    /// Applies every migration newer than the file's version (up to `last`: tests make a store
    /// of an earlier version), each in its own transaction. Returns the versions applied
    /// (empty when the file was already current).
    @discardableResult
    static func migrate(_ connection: SQLiteConnection, upTo last: Int64 = currentVersion) throws -> [Int64] {
        var applied: [Int64] = []
        for migration in migrations where migration.version <= last {
            // BEGIN IMMEDIATE takes the write lock first, so the version read below cannot be
            // changed by another writer before this transaction commits.
            try connection.executeOnce("BEGIN IMMEDIATE")
            do {
                let current = try version(of: connection)
                if current > currentVersion {
                    throw tooNew(current, path: connection.path)
                }
                if current >= migration.version {
                    try connection.executeOnce("COMMIT")
                    continue
                }
                for statement in migration.statements {
                    try connection.executeOnce(statement)
                }
                // "PRAGMA schema.user_version = integer": a PRAGMA takes no bound parameters; the
                // number is a constant of this file, not outside input.
                try connection.executeOnce("PRAGMA user_version = \(migration.version)")
                try connection.executeOnce("COMMIT")
                applied.append(migration.version)
            } catch {
                if !connection.isAutocommit { try? connection.executeOnce("ROLLBACK") }
                if var storeError = error as? StoreError, storeError.kind != .schemaTooNew {
                    storeError.message =
                        "migration \(migration.version) (\(migration.name)) failed: "
                        + storeError.message
                    throw storeError
                }
                throw error
            }
        }
        return applied
    }

    /// Checks that a file opened without migrating carries exactly this build's schema.
    static func checkReadable(_ connection: SQLiteConnection) throws {
        let current = try version(of: connection)
        if current > currentVersion {
            throw tooNew(current, path: connection.path)
        }
        if current == 0 {
            throw StoreError(
                kind: .schemaMismatch,
                message: "not an OrderSync database (no schema); start the node once to create it",
                path: connection.path)
        }
        if current < currentVersion {
            throw StoreError(
                kind: .schemaMismatch,
                message: "the database has schema version \(current), this build reads "
                    + "\(currentVersion); start the node once to upgrade it",
                path: connection.path)
        }
    }

    private static func tooNew(_ version: Int64, path: String) -> StoreError {
        StoreError(
            kind: .schemaTooNew,
            message: "the database has schema version \(version), newer than this build's "
                + "\(currentVersion); use a newer ordersync",
            path: path)
    }
}
