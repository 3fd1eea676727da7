import OrderStore

/// A node's order store, open read-write and checked for the node's role (`NodeStore+Opening`):
/// what a claimed `DataDirectory` holds until the node's `StoreWriter` is built on it; from
/// then on the writer is its only user. Closed with the data directory.
public final class NodeStore {
    /// The read-write connection (the writer's, once the node runs).
    let database: OrderDatabase

    init(database: OrderDatabase) {
        self.database = database
    }

    /// Closes the store. Safe to call more than once.
    public func close() {
        database.close()
    }
}
