import JSON
import SyncCore

/// The master's journal: one row per applied operation, numbered by the caller.
///
/// `seq` is the row's INTEGER PRIMARY KEY and is always given by the caller (the master's
/// engine assigns the next number in the same transaction as the change). `op_id` is UNIQUE, so
/// a repeated operation id cannot be recorded twice; NULL op ids (StorePOS terminals send none)
/// do not collide: "For the purposes of UNIQUE constraints, NULL values are considered distinct
/// from all other values, including other NULLs." `journal_orders` indexes entries by order.
extension OrderDatabase {
    private static let journalColumns = "seq, op_id, origin, operation, order_uuids, message, recorded_at_ms, term"

    /// Records `entry`. Throws `.duplicate` when its `seq` or its `opId` is already recorded;
    /// nothing is stored then.
    public func appendJournal(_ entry: JournalEntry) throws {
        try requireWritable()
        try transaction { try insertJournalRows(entry) }
    }

    /// `appendJournal` inside a transaction the caller holds (the master store's commit, whose
    /// savepoint already covers the order's row and these): no savepoint of its own, which
    /// would journal the same pages a second time (Docs/PERFORMANCE.md, "Where an operation's
    /// instructions go"). If it throws, the caller's transaction undoes what it wrote.
    func insertJournalRows(_ entry: JournalEntry) throws {
        precondition(isInTransaction, "the journal's rows are written inside the caller's transaction")
        let uuids = JSONValue.array(entry.orderUUIDs.map { JSONValue.string($0) }).serialized()
        do {
            try connection.execute(
                """
                INSERT INTO journal (seq, op_id, origin, operation, order_uuids, message, recorded_at_ms, term)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .integer(entry.seq), .text(entry.opId), .text(entry.origin),
                    .integer(Int64(entry.operation.rawValue)), .text(uuids), .utf8(entry.message),
                    .integer(entry.recordedAtMillis), .integer(entry.term),
                ])
            for uuid in entry.orderUUIDs {
                // An order named twice in one message is indexed once.
                try connection.execute(
                    "INSERT INTO journal_orders (uuid_key, seq) VALUES (?, ?) ON CONFLICT DO NOTHING",
                    [.text(uuid.lowercased()), .integer(entry.seq)])
            }
        } catch var error as StoreError where error.kind == .duplicate {
            error.message =
                "journal entry \(entry.seq) (op id \(entry.opId ?? "none")) is already recorded ("
                + error.message + ")"
            throw error
        }
    }

    /// The entry recorded with operation id `opId`, or nil.
    public func journalEntry(opId: String) throws -> JournalEntry? {
        try connection.withStatement(
            "SELECT \(Self.journalColumns) FROM journal WHERE op_id = ?",
            [.text(opId)]
        ) { statement in
            try statement.step() ? try decodeJournalEntry(statement) : nil
        }
    }

    /// The entry with sequence number `seq`, or nil.
    public func journalEntry(seq: Int64) throws -> JournalEntry? {
        try connection.withStatement(
            "SELECT \(Self.journalColumns) FROM journal WHERE seq = ?",
            [.integer(seq)]
        ) { statement in
            try statement.step() ? try decodeJournalEntry(statement) : nil
        }
    }

    /// Up to `limit` entries with `seq > since`, ascending; only those naming `orderUUID` (any
    /// case) when it is given.
    public func journal(since seq: Int64, orderUUID: String?, limit: Int) throws -> [JournalEntry] {
        guard limit >= 0 else {
            throw StoreError(kind: .invalidArgument, message: "limit must not be negative (got \(limit))", path: path)
        }
        let limitValue = SQLiteValue.integer(Int64(limit))
        if let orderUUID {
            return try connection.withStatement(
                """
                SELECT j.seq, j.op_id, j.origin, j.operation, j.order_uuids, j.message, j.recorded_at_ms, j.term
                FROM journal_orders AS o JOIN journal AS j ON j.seq = o.seq
                WHERE o.uuid_key = ? AND o.seq > ?
                ORDER BY o.seq LIMIT ?
                """, [.text(orderUUID.lowercased()), .integer(seq), limitValue]
            ) { try decodeJournalEntries($0) }
        }
        return try connection.withStatement(
            "SELECT \(Self.journalColumns) FROM journal WHERE seq > ? ORDER BY seq LIMIT ?",
            [.integer(seq), limitValue]
        ) { try decodeJournalEntries($0) }
    }

    /// The orders the journal records as removed, as first written, newest removal first, each
    /// once (any case). An order created again after its removal is listed too: the caller
    /// leaves out the orders that exist.
    public func removedOrderUUIDs() throws -> [String] {
        try connection.withStatement(
            "SELECT seq, order_uuids FROM journal WHERE operation = ? ORDER BY seq DESC",
            [.integer(Int64(OperationKind.remove.rawValue))]
        ) { statement in
            var seen: Set<String> = []
            var uuids: [String] = []
            while try statement.step() {
                guard let array = (try? JSONParser.parse(statement.text(1)))?.arrayValue else {
                    throw StoreError(
                        kind: .corruptRow, message: "journal entry \(statement.int64(0)) has a malformed order list", path: path)
                }
                for uuid in array.compactMap(\.stringValue) where seen.insert(uuid.lowercased()).inserted {
                    uuids.append(uuid)
                }
            }
            return uuids
        }
    }

    /// The highest recorded sequence number, or 0 when the journal is empty; never below the
    /// `journal.floor` a promoted standby records (the seq of the snapshot its replica came
    /// from, when its journal holds nothing after it).
    public func lastJournalSeq() throws -> Int64 {
        try connection.scalarInt(
            "SELECT max(coalesce((SELECT max(seq) FROM journal), 0), coalesce((SELECT CAST(value AS INTEGER) FROM metadata WHERE key = 'journal.floor'), 0))"
        ) ?? 0
    }

    /// The lowest recorded sequence number, or nil when the journal is empty. After compaction
    /// the journal covers only `firstJournalSeq()...lastJournalSeq()`. The entries a standby
    /// kept through a snapshot (at or below `standby.base`, Docs/PROTOCOL.md 7.19) are not
    /// counted: the journal from here on is gapless, they are there for `diverged` only.
    public func firstJournalSeq() throws -> Int64? {
        try connection.scalarInt(
            "SELECT min(seq) FROM journal WHERE seq > coalesce((SELECT CAST(value AS INTEGER) FROM metadata WHERE key = 'standby.base'), 0)"
        )
    }

    /// Removes every entry with `seq <= through` (journal compaction), and the operation ids
    /// kept below the journal up to it; returns how many entries.
    @discardableResult
    public func deleteJournal(through seq: Int64) throws -> Int {
        try requireWritable()
        return try transaction {
            try dropAppliedOpIds(through: seq)
            try connection.execute("DELETE FROM journal_orders WHERE seq <= ?", [.integer(seq)])
            return try connection.execute("DELETE FROM journal WHERE seq <= ?", [.integer(seq)])
        }
    }

    /// Journal compaction: removes the oldest entries, up to `through`, but only the run of
    /// entries recorded before `recordedBefore` (a wall clock set back cannot punch a hole in
    /// the middle of the journal). Returns how many entries were removed.
    @discardableResult
    public func compactJournal(through seq: Int64, recordedBefore millis: Int64) throws -> Int {
        // A range scan of the primary key from the oldest entry, stopping at the first young one.
        let young = try connection.scalarInt(
            "SELECT seq FROM journal WHERE seq <= ? AND recorded_at_ms >= ? ORDER BY seq LIMIT 1",
            [.integer(seq), .integer(millis)])
        let limit = min(seq, (young ?? Int64.max) - 1)
        guard limit > 0 else { return 0 }
        return try deleteJournal(through: limit)
    }

    private func decodeJournalEntries(_ statement: SQLiteStatement) throws -> [JournalEntry] {
        var entries: [JournalEntry] = []
        while try statement.step() {
            entries.append(try decodeJournalEntry(statement))
        }
        return entries
    }

    /// The entry in the current row of a statement selecting `journalColumns`.
    private func decodeJournalEntry(_ statement: SQLiteStatement) throws -> JournalEntry {
        let seq = statement.int64(0)
        guard let operation = OperationKind(rawValue: Int(statement.int64(3))) else {
            throw StoreError(kind: .corruptRow, message: "journal entry \(seq) has an unknown operation", path: path)
        }
        let uuidsText = statement.text(4)
        guard let array = (try? JSONParser.parse(uuidsText))?.arrayValue else {
            throw StoreError(kind: .corruptRow, message: "journal entry \(seq) has a malformed order list", path: path)
        }
        var uuids: [String] = []
        for value in array {
            guard let uuid = value.stringValue else {
                throw StoreError(
                    kind: .corruptRow, message: "journal entry \(seq) has a malformed order list",
                    path: path)
            }
            uuids.append(uuid)
        }
        return JournalEntry(
            seq: seq, term: statement.int64(7), opId: statement.optionalText(1), origin: statement.text(2),
            operation: operation, orderUUIDs: uuids, message: statement.utf8(5),
            recordedAtMillis: statement.int64(6))
    }
}

extension OrderDatabase {
    /// A journal search for people (the dashboard): up to `limit` entries, newest first, with
    /// `seq < beforeSeq` when given, naming `orderUUID` (any case), whose origin contains
    /// `origin` (any case), recorded in `fromMillis ..< toMillis`; a nil filter matches all.
    public func journalSearch(
        orderUUID: String?, origin: String?, fromMillis: Int64?, toMillis: Int64?, beforeSeq: Int64?, limit: Int
    ) throws -> [JournalEntry] {
        guard limit >= 0 else {
            throw StoreError(kind: .invalidArgument, message: "limit must not be negative (got \(limit))", path: path)
        }
        let order = SQLiteValue.text(orderUUID?.lowercased())
        let from = fromMillis.map(SQLiteValue.integer) ?? .null
        let to = toMillis.map(SQLiteValue.integer) ?? .null
        let before = beforeSeq.map(SQLiteValue.integer) ?? .null
        return try connection.withStatement(
            """
            SELECT seq, op_id, origin, operation, order_uuids, message, recorded_at_ms, term FROM journal
            WHERE (? IS NULL OR seq IN (SELECT seq FROM journal_orders WHERE uuid_key = ?))
              AND (? IS NULL OR instr(lower(origin), lower(?)) > 0)
              AND (? IS NULL OR recorded_at_ms >= ?) AND (? IS NULL OR recorded_at_ms < ?)
              AND (? IS NULL OR seq < ?)
            ORDER BY seq DESC LIMIT ?
            """,
            [order, order, .text(origin), .text(origin), from, from, to, to, before, before, .integer(Int64(limit))]
        ) { statement in
            var entries: [JournalEntry] = []
            while try statement.step() { entries.append(try decodeJournalEntry(statement)) }
            return entries
        }
    }
}
