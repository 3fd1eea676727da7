import Glibc
import SyncCore

/// What could be read back from a damaged slave replica: the terminal's identity and its
/// outbox (local operations the master has not answered yet). The orders themselves are not
/// needed: the master's snapshot brings them back.
public struct SalvagedReplica: Sendable {
    /// The metadata values that could be read, by key (`salvagedKeys` only).
    public var metadata: [String: String] = [:]
    /// The outbox entries, oldest first; nil when the outbox could not be read.
    public var outbox: [OutboxEntry]?
    /// Why the outbox could not be read.
    public var outboxError: String?
}

extension OrderDatabase {
    /// The metadata a slave keeps across a fresh replica: its terminal id (how the master's
    /// journal and status name it), its role and the store it joined.
    public static let salvagedKeys = ["node.role", "terminal.id", "replica.store"]

    /// Renames the database at `path` and its `-wal`, `-shm` and `-journal` companions to
    /// `path + suffix` (and the same companions), so that nothing is lost and a new database
    /// can be made at `path`. Returns the new name of the database.
    public static func moveAside(_ path: String, suffix: String) throws -> String {
        let target = path + suffix
        // The database first: a crash after it leaves companions that SQLite ignores without
        // their database ("if the database file is missing, the -wal file is not used").
        let pairs = [(path, target)] + zip(DatabaseFileMode.companions(of: path), DatabaseFileMode.companions(of: target)).map { ($0, $1) }
        for (from, to) in pairs where access(from, F_OK) == 0 {
            guard rename(from, to) == 0 else {
                let code = errno
                throw StoreError(
                    kind: .sqlite, message: "cannot move \(from) aside to \(to): \(String(cString: strerror(code)))", path: from)
            }
        }
        return target
    }

    /// Reads what it can of a damaged replica at `path`, read-only, without checks: each
    /// metadata value of `salvagedKeys` and the outbox, each on its own (a damaged page in one
    /// table does not stop the others from being read).
    public static func salvageReplica(path: String) -> SalvagedReplica {
        var salvaged = SalvagedReplica()
        let connection: SQLiteConnection
        do {
            connection = try SQLiteConnection(path: path, readOnly: true)
        } catch {
            salvaged.outboxError = "\(error)"
            return salvaged
        }
        let database = OrderDatabase(connection: connection)
        defer { database.close() }
        for key in salvagedKeys {
            if let value = try? database.metadata(key) { salvaged.metadata[key] = value }
        }
        do {
            salvaged.outbox = try database.outboxEntries()
        } catch {
            salvaged.outboxError = "\(error)"
        }
        return salvaged
    }

    /// Writes what was salvaged from a damaged replica into this (new) database, in one
    /// transaction: the metadata values, and the outbox entries in their order with their
    /// operation ids, messages and base sequences.
    public func restore(_ salvaged: SalvagedReplica) throws {
        try transaction {
            for key in Self.salvagedKeys {
                if let value = salvaged.metadata[key] { try setMetadata(key, value) }
            }
            for entry in salvaged.outbox ?? [] {
                try appendOutbox(entry)
            }
        }
    }
}
