internal import CSQLite3
import Glibc

/// What `OrderDatabase.backup` copied.
public struct BackupSummary: Sendable, Equatable {
    /// The file written.
    public var path: String
    /// Its size in bytes.
    public var bytes: Int64
    /// Orders in the copy.
    public var orders: Int
    /// The master's last journal sequence in the copy (0 on a slave's replica).
    public var journalSeq: Int64
    /// A slave's last applied sequence of its master in the copy (nil on a master).
    public var replicaSeq: Int64?
    /// Local operations waiting in a slave's outbox in the copy.
    public var outbox: Int
    /// The copied database's epoch (a restored master gets a new one).
    public var epoch: String
    /// `master` or `slave`, as the copy's metadata says (nil when no node opened it yet).
    public var role: String?
    /// The schema version of the copy.
    public var schemaVersion: Int64
}

extension OrderDatabase {
    /// Copies the database at `source` into a new file `destination` with SQLite's online
    /// backup, while a daemon may be writing to it, and returns what the copy holds.
    ///
    /// The source is opened read-only and checked (`quick_check`, schema version). The copy is
    /// written to `destination.tmp-PID`, marked as a backup (a node opening it gives it a new
    /// epoch: `adoptRestoredBackup()`), switched to a single file (rollback journal, no `-wal`),
    /// checked with `quick_check`, made 0600, `fsync`ed and only then renamed over
    /// `destination`, whose directory is `fsync`ed too. An existing `destination` is refused
    /// (`.duplicate`) unless `overwrite`. A failure leaves no temporary file behind.
    /// `nodeId`, when given, is recorded in the copy: the node whose key it must be restored with.
    public static func backup(
        from source: String, to destination: String, overwrite: Bool, madeMillis: Int64, nodeId: String? = nil
    ) throws -> BackupSummary {
        if !overwrite, access(destination, F_OK) == 0 {
            throw StoreError(
                kind: .duplicate, message: "\(destination) already exists; choose another file or overwrite it with --force",
                path: destination)
        }
        let reader = try openReadOnly(path: source)
        defer { reader.close() }
        let temporary = destination + ".tmp-\(getpid())"
        removeDatabaseFiles(temporary)
        do {
            try DatabaseFileMode.restrictToOwner(temporary)
            let summary = try writeCopy(of: reader, to: temporary, madeMillis: madeMillis, nodeId: nodeId)
            try syncFile(temporary)
            guard rename(temporary, destination) == 0 else {
                throw posixError("cannot rename \(temporary) to \(destination)", path: destination)
            }
            try syncFile(parentDirectory(of: destination), directory: true)
            var done = summary
            done.path = destination
            return done
        } catch {
            removeDatabaseFiles(temporary)
            throw error
        }
    }

    /// Runs the backup into `path` and finishes the copy there; returns its summary.
    private static func writeCopy(
        of reader: OrderDatabase, to path: String, madeMillis: Int64, nodeId: String?
    ) throws -> BackupSummary {
        let copy = try SQLiteConnection(path: path, readOnly: false)
        defer { copy.close() }
        try copy.setBusyTimeout(busyTimeout)
        try runBackup(from: reader.connection, to: copy)
        let database = OrderDatabase(connection: copy)
        // The copy is a file of its own: a rollback journal instead of the source's WAL, so the
        // backup is one file; "the database connection must not be in WAL mode" when it is
        // moved without its -wal.
        let mode = try copy.scalarText("PRAGMA journal_mode = DELETE")
        guard mode?.lowercased() == "delete" else {
            throw StoreError(kind: .sqlite, message: "the copy stays in journal mode \(mode ?? "unknown")", path: path)
        }
        try database.setMetadata(backupMarkKey, String(madeMillis))
        if let id = nodeId { try database.setMetadata(backupNodeIdKey, id) }
        try requireSound(copy)
        let role = try database.metadata("node.role")
        let replicaSeq = try database.metadata("replica.last_seq").flatMap { Int64($0) }
        var info = stat()
        _ = stat(path, &info)
        return BackupSummary(
            path: path, bytes: Int64(info.st_size), orders: try database.orderCount(),
            journalSeq: try database.lastJournalSeq(), replicaSeq: role == "slave" ? (replicaSeq ?? 0) : nil,
            outbox: try database.outboxCount(), epoch: try database.databaseEpoch(), role: role,
            schemaVersion: try Schema.version(of: copy))
    }

    /// Copies every page of `source` into `destination` in one step, so the copy is one
    /// consistent state of the source (one read transaction; in WAL mode writers go on).
    static func runBackup(from source: SQLiteConnection, to destination: SQLiteConnection) throws {
        let sourceHandle = try source.openHandle()
        let destinationHandle = try destination.openHandle()
        // "sqlite3_backup_init() is called once to initialize the backup, sqlite3_backup_step()
        // is called one or more times to transfer the data between the two databases, and
        // finally sqlite3_backup_finish() is called to release all resources".
        guard let backup = sqlite3_backup_init(destinationHandle, "main", sourceHandle, "main") else {
            throw SQLiteConnection.error(
                rc: sqlite3_errcode(destinationHandle), db: destinationHandle, sql: nil, path: destination.path)
        }
        var rc: Int32
        var waits = 0
        repeat {
            // "If N is negative, all remaining source pages are copied."
            rc = sqlite3_backup_step(backup, -1)
            // "If SQLITE_BUSY or SQLITE_LOCKED is returned, the call may be retried later."
            if rc == SQLITE_BUSY || rc == SQLITE_LOCKED {
                waits += 1
                sqlite3_sleep(100)
            }
        } while (rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED) && waits < 50
        let finish = sqlite3_backup_finish(backup)
        guard rc == SQLITE_DONE, finish == SQLITE_OK else {
            let failed = rc == SQLITE_DONE ? finish : rc
            var error = SQLiteConnection.error(rc: failed, db: destinationHandle, sql: nil, path: destination.path)
            error.message = "the online backup of \(source.path) failed: \(error.message)"
            throw error
        }
    }

    /// `fsync(2)` on a file or a directory.
    static func syncFile(_ path: String, directory: Bool = false) throws {
        let fd = open(path, (directory ? O_RDONLY | O_DIRECTORY : O_RDWR) | O_CLOEXEC)
        guard fd >= 0 else { throw posixError("cannot open \(path) to sync it", path: path) }
        defer { Glibc.close(fd) }
        guard fsync(fd) == 0 else { throw posixError("cannot sync \(path) to disk", path: path) }
    }

    static func posixError(_ what: String, path: String) -> StoreError {
        let code = errno
        return StoreError(
            kind: code == ENOSPC ? .full : .sqlite, message: "\(what): \(String(cString: strerror(code)))", path: path)
    }

    static func removeDatabaseFiles(_ path: String) {
        unlink(path)
        for companion in DatabaseFileMode.companions(of: path) { unlink(companion) }
    }

    static func parentDirectory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let head = path[..<slash]
        return head.isEmpty ? "/" : String(head)
    }
}
