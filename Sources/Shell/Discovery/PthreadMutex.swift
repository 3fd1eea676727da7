import Glibc

/// A value behind a `pthread_mutex_t`: what `Synchronization.Mutex` offers, with a lock that
/// ThreadSanitizer sees.
///
/// On Linux `Mutex` takes a contended lock with a priority-inheriting futex (`FUTEX_LOCK_PI`),
/// acquired inside the kernel, which ThreadSanitizer does not see: every access made under the
/// lock after waiting for it is reported as a data race with the previous holder's (the Avahi
/// discovery tests on a simulated LAN report `start()` and the request worker that way). TSAN
/// intercepts `pthread_mutex_lock`, so the lifecycle that `start()`, `stop()` and the request
/// worker share uses this, and the TSAN run of the discovery tests stays able to report the
/// races that are real.
final class PthreadMutex<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    /// A lock around `value`.
    init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let rc = pthread_mutex_init(mutex, nil)
        precondition(rc == 0, "pthread_mutex_init failed: \(rc)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` on the value with the lock held.
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
