import SyncCore

/// A second connection for reading what is committed while the owner's read-write connection
/// is lent to a COMMIT on another thread.
///
/// "WAL provides more concurrency as readers do not block writers and a writer does not block
/// readers. Reading and writing can proceed concurrently." (sqlite.org/wal.html). A reader sees
/// the database as of the last commit that finished before its read began: never a group still
/// being committed.
extension OrderDatabase {
    /// Opens a read-only connection to the database `writer` has open (a file in WAL mode), for
    /// the same owner's reads. Unlike `openReadOnly(path:)` it checks nothing again: the file is
    /// the one `writer` opened, checked and migrated.
    public static func openReader(of writer: OrderDatabase) throws(StoreError) -> OrderDatabase {
        do {
            let connection = try SQLiteConnection(path: writer.path, readOnly: true)
            do {
                try connection.setBusyTimeout(busyTimeout)
            } catch {
                connection.close()
                throw error
            }
            return OrderDatabase(connection: connection)
        } catch let error as StoreError {
            throw error
        } catch {
            preconditionFailure("the store throws StoreError only: \(error)")
        }
    }
}

/// A snapshot's read of the orders, a page at a time, inside one read transaction on a reader
/// connection (`openReader(of:)`), so that every page comes from the same committed state.
///
/// "In WAL mode, a read transaction [...] sees a consistent snapshot of the database as of the
/// moment the read transaction started, and continues to see that same snapshot for the
/// duration of the transaction, even as other connections commit changes" (sqlite.org/isolation.html).
/// The read transaction starts at its first read ("BEGIN DEFERRED [...] the transaction does not
/// actually start until the database is first accessed", sqlite.org/lang_transaction.html):
/// `beginSnapshotRead()` does that first read, so the snapshot is fixed when it returns.
extension OrderDatabase {
    /// Where a page of the snapshot starts: after the order with this `created` (milliseconds)
    /// and key, in the orders' snapshot order (`created_ms, uuid_key`, as `allOrders()`).
    public typealias SnapshotPageStart = (createdMillis: Int64, key: String)

    /// Begins the read transaction and fixes its view of the store now (the caller does it while
    /// the store holds exactly what the snapshot stands for).
    public func beginSnapshotRead() throws {
        _ = try connection.execute("BEGIN DEFERRED")
        do {
            _ = try connection.scalarInt("SELECT count(*) FROM (SELECT 1 FROM orders LIMIT 1)")
        } catch {
            _ = try? connection.execute("ROLLBACK")
            throw error
        }
    }

    /// Ends the read transaction (nothing was written: it is rolled back).
    public func endSnapshotRead() {
        _ = try? connection.execute("ROLLBACK")
    }

    /// At most `limit` orders after `start` (from the first when nil), in the snapshot's order;
    /// keyset paging on the `orders_by_created` index, so a page costs the same wherever it is.
    public func snapshotPage(after start: SnapshotPageStart?, limit: Int) throws -> [Order] {
        let sql: String
        var values: [SQLiteValue] = []
        if let start {
            sql = """
                SELECT \(Self.orderColumns) FROM orders WHERE (created_ms, uuid_key) > (?, ?)
                ORDER BY created_ms, uuid_key LIMIT ?
                """
            values = [.integer(start.createdMillis), .text(start.key)]
        } else {
            sql = "SELECT \(Self.orderColumns) FROM orders ORDER BY created_ms, uuid_key LIMIT ?"
        }
        values.append(.integer(Int64(limit)))
        return try connection.withStatement(sql, values) { statement in
            var orders: [Order] = []
            orders.reserveCapacity(limit)
            while try statement.step() { orders.append(try decodeOrder(statement)) }
            return orders
        }
    }

    /// What a StorePOS app's connect sequence removes after the orders' own: the orders the
    /// journal records as removed and the foreign orders an operator cleared, as first written,
    /// newest removal first, leaving out those the store holds (any case).
    public func snapshotRemovedUUIDs() throws -> [String] {
        let named = try removedOrderUUIDs() + foreignOrders(state: .cleared).map(\.uuid)
        return try named.filter { uuid in
            try connection.scalarInt("SELECT count(*) FROM orders WHERE uuid_key = ?", [.text(uuid.lowercased())]) == 0
        }
    }
}
