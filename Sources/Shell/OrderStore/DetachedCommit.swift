internal import CSQLite3
import Foundation

/// The COMMIT of a group of changes, run on a thread other than the connection's owner so
/// that the owner's loop keeps serving sockets and timers during the `fsync`.
///
/// Made by `OrderDatabase.detachGroupCommit()`. Until it is done, the connection waits for it
/// before any other use (`SQLiteConnection.settle()`), so SQLite is never called on two
/// threads at once: the handoff is a mutex and a condition variable.
// @unchecked Sendable: `run()` is called once, on the committing thread; `done` and `failure`
// are read and written under `mutex` only.
public final class DetachedCommit: @unchecked Sendable {
    private let handle: OpaquePointer
    private let path: String
    private var mutex = pthread_mutex_t()
    private var condition = pthread_cond_t()
    private var done = false
    private var failure: StoreError?

    init(handle: OpaquePointer, path: String) {
        self.handle = handle
        self.path = path
        pthread_mutex_init(&mutex, nil)
        pthread_cond_init(&condition, nil)
    }

    deinit {
        pthread_cond_destroy(&condition)
        pthread_mutex_destroy(&mutex)
    }

    /// Commits (with the connection's `synchronous` setting: FULL syncs the WAL before
    /// returning) or, when the COMMIT fails, rolls the transaction back so nothing of the group
    /// stays. Call once, on the committing thread.
    public func run() {
        var failure: StoreError?
        let rc = sqlite3_exec(handle, "COMMIT", nil, nil, nil)
        if rc != SQLITE_OK {
            failure = SQLiteConnection.error(rc: rc, db: handle, sql: "COMMIT", path: path)
            // "If certain kinds of errors occur ... the transaction might be rolled back
            // automatically"; otherwise it is still open and is rolled back here.
            if sqlite3_get_autocommit(handle) == 0 { _ = sqlite3_exec(handle, "ROLLBACK", nil, nil, nil) }
        }
        pthread_mutex_lock(&mutex)
        self.failure = failure
        done = true
        pthread_cond_broadcast(&condition)
        pthread_mutex_unlock(&mutex)
    }

    /// Blocks until `run()` has finished.
    public func wait() {
        pthread_mutex_lock(&mutex)
        while !done { pthread_cond_wait(&condition, &mutex) }
        pthread_mutex_unlock(&mutex)
    }

    /// Whether `run()` has finished.
    public var isDone: Bool {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return done
    }

    /// How the COMMIT went: nil when it committed; waits for it first.
    public var error: StoreError? {
        wait()
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return failure
    }
}
