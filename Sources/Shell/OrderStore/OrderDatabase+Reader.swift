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
