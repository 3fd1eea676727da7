import Foundation
import JSON
import OrderStore

/// `ordersync backup`: a consistent copy of a node's order store, taken with SQLite's online
/// backup while the daemon runs (or not), checked and written atomically.
public enum StoreBackup {
    /// A backup that could not be made, with the kind of failure for the exit status.
    public struct Failure: Error, CustomStringConvertible {
        /// What went wrong and what to do.
        public var message: String
        /// `.notFound` (no store, no folder for the file), `.refused` (the file exists, a
        /// store of a newer build),
        /// `.storage` (the store or the copy is damaged or cannot be read or written).
        public var failure: StartupFailure
        public var description: String { message }
    }

    /// What was copied: as JSON (`--json`) and as lines for people.
    public struct Report {
        /// `file`, `bytes`, `orders`, `journalSeq`, `replicaSeq` (slave), `outbox`, `epoch`,
        /// `role`, `schemaVersion`, `keys` (the folder of key files, null when none) and
        /// `keyFiles` (their names).
        public var json: JSONObject
        /// The same, readable, with how to restore it.
        public var lines: [String]
    }

    /// Copies the store of `dataDirectory` to `file` (refused when it exists, unless `force`).
    public static func make(dataDirectory: String, file: String, force: Bool, now: Date = Date()) throws -> Report {
        let source = (dataDirectory as NSString).appendingPathComponent(NodeDefaults.databaseFile)
        guard FileManager.default.fileExists(atPath: source) else {
            throw Failure(message: "there is no order store at \(source) to back up (check --data-dir)", failure: .notFound)
        }
        let folder = PrivateDirectory.parent(of: file)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw Failure(message: "cannot write the backup \(file): the folder \(folder) does not exist", failure: .notFound)
        }
        if !force, FileManager.default.fileExists(atPath: keysFolder(of: file)) {
            throw Failure(
                message: "\(keysFolder(of: file)) already exists; choose another file or overwrite it with --force", failure: .refused)
        }
        let summary: BackupSummary
        do {
            // The key the copy must be restored with (a key file that cannot be read: none named).
            let key = (dataDirectory as NSString).appendingPathComponent(NodeDefaults.keyFile)
            summary = try OfflineStore.backup(
                from: source, to: file, overwrite: force, madeMillis: Int64(now.timeIntervalSince1970 * 1000),
                nodeId: (try? NodeIdentity.load(path: key))??.nodeId)
        } catch let error as StoreError {
            throw failure(error, source: source)
        }
        let keys = try copyKeys(dataDirectory: dataDirectory, file: file, force: force)
        return report(summary, keys: keys, dataDirectory: dataDirectory)
    }

    private static func failure(_ error: StoreError, source: String) -> Failure {
        switch error.kind {
        case .duplicate:
            return Failure(message: error.message, failure: .refused)
        case .schemaTooNew:
            return Failure(message: "no backup made: \(error.message) [file \(source)]", failure: .refused)
        case .damaged:
            let problems = (error.problems.isEmpty ? [error.message] : error.problems).map { "    \($0)" }
            return Failure(
                message: "no backup made: \(error.path == source ? "the order store" : "the copy") \(error.path ?? source) is damaged "
                    + "(PRAGMA quick_check):\n\(problems.joined(separator: "\n"))\n  See \"A damaged store\" in Docs/OPERATIONS.md.",
                failure: .storage)
        default:
            return Failure(message: "no backup made: \(error)", failure: .storage)
        }
    }

    private static func report(_ s: BackupSummary, keys: [String], dataDirectory: String) -> Report {
        var json = JSONObject()
        json["file"] = .string(s.path)
        json["bytes"] = .int(s.bytes)
        json["orders"] = .int(Int64(s.orders))
        json["journalSeq"] = .int(s.journalSeq)
        if let r = s.replicaSeq { json["replicaSeq"] = .int(r) }
        json["outbox"] = .int(Int64(s.outbox))
        json["epoch"] = .string(s.epoch)
        json["role"] = s.role.map { .string($0) } ?? .null
        json["schemaVersion"] = .int(s.schemaVersion)
        let folder = keysFolder(of: s.path)
        json["keys"] = keys.isEmpty ? .null : .string(folder)
        json["keyFiles"] = .array(keys.map { .string($0) })
        let position = s.replicaSeq.map { "replica seq \($0), \(s.outbox) queued local operation(s)" } ?? "journal seq \(s.journalSeq)"
        let store = (dataDirectory as NSString).appendingPathComponent(NodeDefaults.databaseFile)
        let keyLines =
            keys.isEmpty
            ? ["  no key file in \(dataDirectory): a node restored from this backup makes a new key (its tills pair again)"]
            : [
                "keys written: \(folder)/ (\(keys.joined(separator: ", ")); mode 0600)",
                "  SECRET: \(NodeDefaults.keyFile) is the node's private key; keep the backup and this folder as safe as the till",
            ]
        let lines =
            [
                "backup written: \(s.path) (\(s.bytes) bytes, checked with quick_check)",
                "  \(s.role ?? "node") store: \(s.orders) order(s), \(position), epoch \(s.epoch), schema \(s.schemaVersion)",
            ]
            + keyLines + [
                "  to restore: stop the daemon, move \(store) and its -wal and -shm aside, copy this file to \(store)"
                    + (keys.isEmpty ? "" : " and the files of \(folder)/ to \(dataDirectory)/") + ", start it "
                    + "(Docs/OPERATIONS.md, \"Backup and restore\")"
            ]
        return Report(json: json, lines: lines)
    }
}
