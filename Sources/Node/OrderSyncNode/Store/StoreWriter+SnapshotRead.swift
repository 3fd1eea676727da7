import OrderStore
import SyncCore

/// A read of the orders as they stand now, for a snapshot read a page at a time off the loop
/// (`PagedSnapshotRead`): a read-only connection of its own, inside one read transaction
/// (`OrderDatabase+Reader.swift`), so every page comes from the same committed state.
final class SnapshotReadConnection: @unchecked Sendable {
    // @unchecked Sendable: the connection is used by one thread at a time: the loop begins its
    // read transaction (`StoreWriter.beginSnapshotRead()`) before any work for it is queued,
    // then only the node's snapshot queue (serial) uses it, and ends it there.
    private let database: OrderDatabase

    fileprivate init(_ database: OrderDatabase) { self.database = database }

    /// How many orders the read sees.
    func orderCount() throws -> Int { try database.orderCount() }

    /// The removed orders a StorePOS app's connect sequence names after the orders' own.
    func removedUUIDs() throws -> [String] { try database.snapshotRemovedUUIDs() }

    /// At most `limit` orders after `start` (the first when nil), in the snapshot's order.
    func page(after start: (createdMillis: Int64, key: String)?, limit: Int) throws -> [Order] {
        try database.snapshotPage(after: start, limit: limit)
    }

    /// Ends the read transaction and closes the connection (on the snapshot queue).
    func end() {
        database.endSnapshotRead()
        database.close()
    }
}

extension StoreWriter {
    /// Opens a reader connection of the store and begins its read transaction now: it sees what
    /// is committed at this moment for as long as it lives (the caller makes sure that is what
    /// it wants: the store idle, on the loop).
    func beginSnapshotRead() throws -> SnapshotReadConnection {
        let database = try read { try OrderDatabase.openReader(of: $0) }
        do {
            try database.beginSnapshotRead()
        } catch {
            database.close()
            throw error
        }
        return SnapshotReadConnection(database)
    }
}
