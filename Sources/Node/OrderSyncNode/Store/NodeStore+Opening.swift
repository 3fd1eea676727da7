import Foundation
import Logging
import NodePolicy
import OrderStore

/// Opening a node's order store at start: a damaged or unreadable store is refused with what is
/// wrong and the way back; a slave's damaged replica is moved aside (kept) and replaced by a
/// fresh one that keeps the terminal's outbox; a copy made by `ordersync backup` put back in
/// place is adopted (a master's: a new term; a replica's: a new epoch); a store of an older
/// schema is copied to `backups/` before it is migrated.
extension NodeStore {
    /// Opens the store of `c` and checks it belongs to the configuration's role; `nodeId` is
    /// the node's own (a restored backup made with another key is reported).
    static func open(_ c: NodeConfiguration, logger: Logger, nodeId: String? = nil, now: Date = Date()) throws -> NodeStore {
        let db: OrderDatabase
        do {
            db = try OrderDatabase(path: c.databasePath)
        } catch let error as StoreError where error.kind == .damaged {
            db = try replaceDamagedReplica(c, error, logger: logger, now: now)
        } catch let error as StoreError {
            throw NodeStartupError(refusal(c, error), failure: error.kind == .schemaTooNew ? .refused : .storage)
        } catch {
            throw NodeStartupError("cannot open the order store \(c.databasePath): \(error)", failure: .storage)
        }
        if let copy = db.migrationBackup {
            logger.notice(
                "store.migration_backup",
                metadata: [
                    "path": "\(c.databasePath)", "backup": "\(copy.path)", "schema.from": "\(copy.fromVersion)",
                    "schema.to": "\(copy.toVersion)", "removed": "\(copy.removed.joined(separator: ","))",
                    "hint": """
                    the store as it was before the upgrade; to roll back: stop, install the previous package, copy this \
                    file to \(c.databasePath) (its -wal and -shm moved aside), start (Docs/OPERATIONS.md, "Rollback")
                    """,
                ])
        }
        do {
            if let role = try db.metadata("node.role"), role != c.role.rawValue {
                throw NodeStartupError(
                    "\(c.dataDirectory) holds a \(role)'s order store; use another --data-dir for the \(c.role.rawValue)",
                    failure: .storeMismatch, fix: "use another --data-dir for the \(c.role.rawValue)")
            }
            try db.setMetadata("node.role", c.role.rawValue)
            if let restored = try db.adoptRestoredBackup() {
                logger.notice("store.restored", metadata: restoredMetadata(restored, path: c.databasePath))
                if let made = restored.madeByNodeId, let own = nodeId, made != own {
                    logger.error(
                        "store.restored_other_key",
                        metadata: [
                            "backup.node_id": "\(made)", "node.id": "\(own)", "key": "\(c.keyPath)",
                            "hint": """
                            the backup was made with another node.key: the tills will not trust this one and must pair again. \
                            Stop the daemon, copy node.key from the backup's FILE.keys folder to \(c.keyPath) (mode 0600) and start it
                            """,
                        ])
                }
            }
        } catch let error as StoreError {
            db.close()
            throw NodeStartupError("cannot open the order store \(c.databasePath): \(error)", failure: .storage)
        } catch {
            db.close()
            throw error
        }
        return NodeStore(database: db)
    }

    /// A slave's damaged replica: read back its identity and outbox, move it aside, and start a
    /// fresh replica with them. A master's damaged store (or a replica that says it is a
    /// master's) is refused: its orders exist nowhere else.
    private static func replaceDamagedReplica(
        _ c: NodeConfiguration, _ damage: StoreError, logger: Logger, now: Date
    ) throws -> OrderDatabase {
        guard c.role == .slave else { throw NodeStartupError(refusal(c, damage), failure: .storage) }
        let salvaged = OrderDatabase.salvageReplica(path: c.databasePath)
        if let role = salvaged.metadata["node.role"], role != NodeRole.slave.rawValue {
            throw NodeStartupError(refusal(c, damage), failure: .storage)
        }
        let aside: String
        let fresh: OrderDatabase
        do {
            aside = try OrderDatabase.moveAside(c.databasePath, suffix: ".damaged-\(fileStamp(now))")
            fresh = try OrderDatabase(path: c.databasePath)
            try fresh.restore(salvaged)
        } catch {
            throw NodeStartupError(
                "the replica \(c.databasePath) is damaged and could not be replaced: \(error)", failure: .storage)
        }
        var metadata: Logger.Metadata = [
            "path": "\(c.databasePath)", "moved_to": "\(aside)", "problems": "\(problems(of: damage).joined(separator: " | "))",
            "terminal.id": "\(salvaged.metadata["terminal.id"] ?? "new")",
        ]
        if let outbox = salvaged.outbox {
            metadata["outbox.kept"] = "\(outbox.count)"
            metadata["outbox.lost"] = "0"
            metadata["hint"] = "a fresh replica takes a snapshot from the master; the damaged file is kept"
        } else {
            metadata["outbox.kept"] = "0"
            metadata["outbox.lost"] = "unknown"
            metadata["outbox.error"] = "\(salvaged.outboxError ?? "unreadable")"
            metadata["hint"] =
                "local changes not yet delivered could not be read back and may be lost; the damaged file is kept for inspection"
        }
        logger.error("store.replica_damaged", metadata: metadata)
        return fresh
    }

    /// What `store.restored` says: a master's new term, or a replica's new epoch.
    private static func restoredMetadata(_ r: RestoredBackup, path: String) -> Logger.Metadata {
        var metadata: Logger.Metadata = [
            "path": "\(path)", "backup.made": "\(timestamp(millis: r.madeMillis))",
            "epoch.previous": "\(r.previousEpoch)", "epoch": "\(r.newEpoch)",
        ]
        if let term = r.term, let start = r.termStart {
            metadata["term.previous"] = "\(r.previousTerm ?? 1)"
            metadata["term"] = "\(term)"
            metadata["term.start"] = "\(start)"
            metadata["hint"] = """
                a master's store restored from a backup keeps its epoch and starts a new term: slaves holding \
                operations applied after the backup send them again (sync.diverged on each), each applied once
                """
        } else {
            metadata["hint"] = "a replica restored from a backup: it takes a fresh snapshot from the master"
        }
        return metadata
    }

    /// The message of a store the node refuses to use.
    static func refusal(_ c: NodeConfiguration, _ error: StoreError) -> String {
        let path = c.databasePath
        switch error.kind {
        case .damaged:
            let lines = problems(of: error).map { "\n    \($0)" }.joined()
            return "the order store \(path) is damaged; the \(c.role.rawValue) does not serve it.\n"
                + "  SQLite reports (PRAGMA quick_check):\(lines)\n"
                + "  The file is left as it is. The way back: move the damaged files aside (\(path) and its -wal and -shm), "
                + "copy your latest backup made with `ordersync backup` to \(path) and start again; "
                + "see \"Backup and restore\" and \"A damaged store\" in Docs/OPERATIONS.md."
        case .schemaTooNew:
            return "cannot open the order store \(path): \(error.message). It was written by a newer ordersync; "
                + "install that version again (or restore a backup made by this one)"
        default:
            return "cannot open the order store \(path): \(error)"
        }
    }

    private static func problems(of error: StoreError) -> [String] {
        error.problems.isEmpty ? [error.message] : error.problems
    }

    /// `20261125T143005Z`: a UTC time for file names.
    static func fileStamp(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        return formatter.string(from: date)
    }

    private static func timestamp(millis: Int64) -> String {
        ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(millis) / 1000))
    }
}
