internal import CSQLite3
import Glibc

/// The copy of a store made before a schema migration: the way back to the previous build.
public struct MigrationBackup: Sendable, Equatable {
    /// The copy (`DATADIR/backups/store-v<old>-<UTC time>.db`).
    public var path: String
    /// The schema version the store (and the copy) had.
    public var fromVersion: Int64
    /// The version the store is migrated to.
    public var toVersion: Int64
    /// Older copies removed to keep the last `OrderDatabase.migrationBackupsKept`.
    public var removed: [String]
}

extension OrderDatabase {
    /// How many pre-migration copies `backups/` keeps (the newest).
    public static let migrationBackupsKept = 3

    /// The folder, beside the database, that holds the pre-migration copies.
    public static func migrationBackupFolder(of databasePath: String) -> String {
        parentDirectory(of: databasePath) + "/backups"
    }

    /// Before a file of an older schema version is migrated: copies it, as it is, to
    /// `backups/store-v<old>-<UTC time>.db` beside it (folder 0700, file 0600, one file in
    /// rollback-journal mode, synced), and removes the oldest copies beyond
    /// `migrationBackupsKept`. Nil when there is nothing to migrate (a new file, a current
    /// one, one of a newer build: refused by `Schema.migrate` next) or for `:memory:`.
    ///
    /// The copy is made with SQLite's online backup, as `ordersync backup` makes its copies,
    /// but is not marked as a backup: put back by the previous build after a rollback, it is
    /// that build's store as it was, not a restore.
    static func backupBeforeMigration(_ connection: SQLiteConnection, now: time_t = time(nil)) throws -> MigrationBackup? {
        let path = connection.path
        let version = try Schema.version(of: connection)
        guard path != ":memory:", !path.isEmpty, version > 0, version < Schema.currentVersion else { return nil }
        let folder = migrationBackupFolder(of: path)
        if mkdir(folder, 0o700) != 0, errno != EEXIST {
            throw posixError("cannot create \(folder) for the copy made before migrating the store", path: folder)
        }
        let file = folder + "/store-v\(version)-\(fileStamp(now)).db"
        let temporary = file + ".tmp-\(getpid())"
        removeDatabaseFiles(temporary)
        do {
            try DatabaseFileMode.restrictToOwner(temporary)
            let copy = try SQLiteConnection(path: temporary, readOnly: false)
            do {
                try copy.setBusyTimeout(busyTimeout)
                try runBackup(from: connection, to: copy)
                // One file: "the database connection must not be in WAL mode" when it is moved
                // without its -wal.
                let mode = try copy.scalarText("PRAGMA journal_mode = DELETE")
                guard mode?.lowercased() == "delete" else {
                    throw StoreError(kind: .sqlite, message: "the copy stays in journal mode \(mode ?? "unknown")", path: temporary)
                }
                copy.close()
            } catch {
                copy.close()
                throw error
            }
            try syncFile(temporary)
            guard rename(temporary, file) == 0 else {
                throw posixError("cannot rename \(temporary) to \(file)", path: file)
            }
            try syncFile(folder, directory: true)
        } catch var error as StoreError {
            removeDatabaseFiles(temporary)
            error.message = "no copy of the store before migrating it from schema \(version): \(error.message); nothing was migrated"
            throw error
        }
        return MigrationBackup(
            path: file, fromVersion: version, toVersion: Schema.currentVersion, removed: pruneMigrationBackups(in: folder))
    }

    /// Removes the oldest `store-v*.db` copies beyond `migrationBackupsKept` (by the UTC time
    /// in their names); returns the paths removed.
    private static func pruneMigrationBackups(in folder: String) -> [String] {
        guard let dir = opendir(folder) else { return [] }
        var copies: [(stamp: String, path: String)] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            guard name.hasPrefix("store-v"), name.hasSuffix(".db"), let dash = name.lastIndex(of: "-") else { continue }
            copies.append((String(name[name.index(after: dash)...]), folder + "/" + name))
        }
        closedir(dir)
        let old = copies.sorted { $0.stamp > $1.stamp }.dropFirst(migrationBackupsKept)
        for copy in old { unlink(copy.path) }
        return old.map(\.path).sorted()
    }

    /// `20261127T190102Z`: a UTC time for file names (sorts as it reads).
    static func fileStamp(_ now: time_t) -> String {
        var t = now
        var parts = tm()
        gmtime_r(&t, &parts)
        var buffer = [CChar](repeating: 0, count: 32)
        let count = strftime(&buffer, buffer.count, "%Y%m%dT%H%M%SZ", &parts)
        return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
