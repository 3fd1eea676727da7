import Foundation
import JSON
import OrderStore
import SyncCore

/// A data directory's store read by another process while no daemon serves it (the CLI's
/// `order list`, `order show`, `journal`, `export`): opened read-only for one closure and closed
/// after it. It never writes; a running node's store is reached through its `StoreWriter`.
enum OfflineStore {
    /// Runs `body` on the store of `dataDirectory`, opened read-only (SQLITE_OPEN_READONLY).
    static func read<T>(_ dataDirectory: String, _ body: (OrderDatabase) throws -> T) throws -> T {
        let db = try open(dataDirectory)
        defer { db.close() }
        return try body(db)
    }

    private static func open(_ dir: String) throws -> OrderDatabase {
        try FileOwner.requireDirectory(dir)
        let path = (dir as NSString).appendingPathComponent(NodeDefaults.databaseFile)
        // SQLite says only "unable to open database file": tell why first.
        if access(path, R_OK) != 0 {
            if errno == EACCES { throw LocalAPIClientError.permissionDenied(path: path, owner: FileOwner(of: path, orOf: dir)) }
            throw LocalAPIClientError.noStore(dataDirectory: dir)
        }
        return try OrderDatabase.openReadOnly(path: path)
    }

    /// How a stopped node shows its orders: on a slave, with `sync` pending for what is still
    /// in its outbox.
    static func view(_ db: OrderDatabase) throws -> (Order) -> JSONObject {
        guard try db.metadata("node.role") == "slave" else { return { $0.json } }
        let pending = Set(try db.outboxEntries().flatMap(\.orderKeys))
        return { order in
            var o = order.json
            o["sync"] = .string(pending.contains(order.key) ? "pending" : "synced")
            return o
        }
    }

    /// `ordersync backup`: copies the store at `source` to `file` (SQLite's online backup: a
    /// running node keeps writing meanwhile).
    static func backup(
        from source: String, to file: String, overwrite: Bool, madeMillis: Int64, nodeId: String?
    ) throws -> BackupSummary {
        try OrderDatabase.backup(from: source, to: file, overwrite: overwrite, madeMillis: madeMillis, nodeId: nodeId)
    }
}
