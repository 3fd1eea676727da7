import SyncCore

/// Checking a database file before it is used, and recognising a copy made by `backup`.
extension OrderDatabase {
    /// How many of `quick_check`'s lines an error keeps.
    public static let reportedProblems = 10

    /// Runs `PRAGMA quick_check`: an empty list when the file is sound, else SQLite's first
    /// `limit` lines about what is wrong.
    ///
    /// "PRAGMA quick_check ... The pragma is like integrity_check except that it does not verify
    /// UNIQUE constraints and does not verify that index content matches table content. By
    /// skipping UNIQUE and index consistency checks, quick_check is able to run faster."
    /// "If the integrity_check pragma finds problems, strings are returned (as multiple rows with
    /// a single column per row) which describe the problems. ... If pragma integrity_check finds
    /// no errors, a single row with the value 'ok' is returned."
    public func quickCheck(limit: Int = OrderDatabase.reportedProblems) throws -> [String] {
        try Self.quickCheck(connection, limit: limit)
    }

    /// `quickCheck` on `connection`; throws `.damaged` (with the lines) when it finds problems.
    static func requireSound(_ connection: SQLiteConnection) throws {
        let problems: [String]
        do {
            problems = try quickCheck(connection, limit: reportedProblems)
        } catch var error as StoreError where error.kind == .damaged {
            error.problems = [error.message]
            throw error
        }
        guard !problems.isEmpty else { return }
        throw StoreError(
            kind: .damaged, message: "the database file is damaged (quick_check: \(problems[0]))",
            sql: "PRAGMA quick_check", path: connection.path, problems: problems)
    }

    private static func quickCheck(_ connection: SQLiteConnection, limit: Int) throws -> [String] {
        // "PRAGMA schema.quick_check(N)": N limits the number of errors reported. A PRAGMA takes
        // no bound parameters; `limit` is an integer, not outside text.
        let rows = try connection.withStatement("PRAGMA quick_check(\(max(1, limit)))") { statement in
            var out: [String] = []
            do {
                while try statement.step() { out.append(statement.optionalText(0) ?? "") }
            } catch let error as StoreError where error.kind == .damaged && !out.isEmpty {
                // SQLite may report its findings and then fail the last step with SQLITE_CORRUPT:
                // the findings are what an operator needs.
                return out
            }
            return out
        }
        guard rows != ["ok"] else { return [] }
        // One row may hold several findings, one a line.
        let lines = rows.flatMap { $0.split(separator: "\n").map(String.init) }
        // "*** in database main ***" heads the findings about the main database: the only one.
        let findings = lines.filter { !$0.hasPrefix("*** in database") }
        return findings.isEmpty ? lines : findings
    }
}

/// A database opened by a node that `backup` made: what it was, and what it became.
///
/// A master's store keeps its epoch and starts a new term (`term`, `termStart`); a slave's
/// replica gets a new epoch (`newEpoch`), as it always did.
public struct RestoredBackup: Sendable, Equatable {
    /// When the backup was made (milliseconds since 1970), as the copy recorded it.
    public var madeMillis: Int64
    /// The epoch the database had when it was copied.
    public var previousEpoch: String
    /// Its epoch now: the same on a master's store, a new one on a slave's replica.
    public var newEpoch: String
    /// A master's store: the term it was in when copied (nil on a replica).
    public var previousTerm: Int64?
    /// A master's store: the term it starts on being opened (nil on a replica).
    public var term: Int64?
    /// A master's store: the first seq of that term, the one after the copy's last.
    public var termStart: Int64?
    /// The node id of the key the copy was made with (`ordersync backup` records it), if known.
    public var madeByNodeId: String?
}

extension OrderDatabase {
    /// The metadata key a copy made by `backup` carries until a node opens it.
    static let backupMarkKey = "backup.made_ms"
    /// The metadata key naming the node whose key a copy must be restored with.
    static let backupNodeIdKey = "backup.node_id"

    /// A new random (version 4) UUID, made by SQLite, in lower case.
    static let newEpochSQL = """
        SELECT lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4' ||
            substr(lower(hex(randomblob(2))), 2) || '-' ||
            substr('89ab', 1 + (abs(random()) % 4), 1) || substr(lower(hex(randomblob(2))), 2) || '-' ||
            lower(hex(randomblob(6)))
        """

    /// When this file is a copy made by `backup` (put back in place of a database), adopts it
    /// and clears the mark, in one transaction; nil for any other file.
    ///
    /// **A master's store keeps its epoch and starts a new term** (Docs/PROTOCOL.md, "A
    /// restored master"). Its slaves may hold entries past the copy's last seq (their standby
    /// journals, their outboxes). The same epoch lets them keep their replicas; the new term,
    /// starting right after the copy's last seq, tells the master's history apart from theirs
    /// at the seqs it will now reuse: every slave ahead is answered `diverged` with
    /// K = the copy's last seq, puts its entries after K back into its outbox with their
    /// operation ids, and the master applies each once. A new epoch instead made the slaves
    /// take a snapshot over them and drop them.
    ///
    /// **A slave's replica gets a new epoch**: it is only a copy of its master's orders, and
    /// takes a fresh snapshot (its outbox is sent as usual).
    public func adoptRestoredBackup() throws -> RestoredBackup? {
        guard let made = try metadata(Self.backupMarkKey) else { return nil }
        return try transaction {
            let previous = try databaseEpoch()
            var restored = RestoredBackup(madeMillis: Int64(made) ?? 0, previousEpoch: previous, newEpoch: previous)
            restored.madeByNodeId = try metadata(Self.backupNodeIdKey)
            if try metadata("node.role") == "master" {
                let previousTerm = try term()
                let start = try lastJournalSeq() + 1
                // The new term is a ballot only this master may bid (Docs/PROTOCOL.md 7.16): a
                // till promoted after the copy was made holds a term of its own number, never
                // this one, so the two are told apart and the lower steps down.
                let number = try ownMemberNumber() ?? nextMemberNumber()
                try setMetadata(Self.memberNumberKey, String(number))
                let newTerm = TermBallot.bid(number: number, above: previousTerm)
                try addTermStart(term: newTerm, seq: start)
                try setTerm(newTerm)
                try setMetadata("database.restored_in_term", String(newTerm))
                restored.previousTerm = previousTerm
                restored.term = newTerm
                restored.termStart = start
            } else {
                guard let epoch = try connection.scalarText(Self.newEpochSQL) else {
                    throw StoreError(kind: .sqlite, message: "SQLite made no epoch", path: path)
                }
                try setMetadata("database.epoch", epoch)
                try setMetadata("database.restored_from_epoch", previous)
                restored.newEpoch = epoch
            }
            try removeMetadata(Self.backupMarkKey)
            try removeMetadata(Self.backupNodeIdKey)
            return restored
        }
    }
}
