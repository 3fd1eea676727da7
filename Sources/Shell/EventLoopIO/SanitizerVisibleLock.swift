internal import CLinux

/// Tells ThreadSanitizer about a `Mutex`'s critical section.
///
/// `Synchronization.Mutex` locks with a futex inside the standard library, which is not built
/// with ThreadSanitizer, so the sanitizer sees no ordering between two threads' critical
/// sections and reports the guarded state as a data race (seen on `LoopInbox` under load).
/// Inside `withLock`, call ``acquired(_:)`` first and ``releasing(_:)`` last (in a `defer`),
/// with the object that owns the mutex as the token; in a build without ThreadSanitizer both
/// are empty C calls. Every `Mutex` of the project that more than one thread takes does this
/// (the loop's inbox, Avahi discovery's lifecycle, the node's error log).
public enum SanitizerVisibleLock {
    /// The lock owned by `owner` was just taken.
    public static func acquired(_ owner: AnyObject) {
        CLinux_sanitizer_acquire(UnsafeRawPointer(Unmanaged.passUnretained(owner).toOpaque()))
    }

    /// The lock owned by `owner` is about to be given back.
    public static func releasing(_ owner: AnyObject) {
        CLinux_sanitizer_release(UnsafeRawPointer(Unmanaged.passUnretained(owner).toOpaque()))
    }
}
