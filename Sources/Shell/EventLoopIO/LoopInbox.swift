internal import CLinux
import Glibc
import Synchronization

/// The thread-safe way into an event loop: a task queue under a `Mutex` plus an `eventfd` that
/// makes `epoll_wait` return.
///
/// The inbox outlives its loop if a ``Waker`` still holds it, so waking a loop that is gone
/// writes to a still-open `eventfd` and does nothing else.
final class LoopInbox: Sendable {
    /// What other threads hand over, all behind one lock.
    private struct Queue {
        var tasks: [@Sendable () -> Void] = []
        /// The `eventfd` was written and not yet drained: later tasks need not write again.
        var signalled = false
        var stopRequested = false
    }

    let eventDescriptor: Int32
    private let queue = Mutex(Queue())

    init() throws {
        eventDescriptor = try Syscall.call("eventfd") {
            eventfd(0, CLinux_EFD_CLOEXEC | CLinux_EFD_NONBLOCK)
        }
    }

    deinit {
        Syscall.close(eventDescriptor)
    }

    /// Queues `task` for the loop thread and wakes the loop (once per batch of tasks).
    func enqueue(_ task: @escaping @Sendable () -> Void) {
        let mustSignal = queue.withLock { queue in
            SanitizerVisibleLock.acquired(self)
            defer { SanitizerVisibleLock.releasing(self) }
            queue.tasks.append(task)
            defer { queue.signalled = true }
            return !queue.signalled
        }
        if mustSignal {
            signal()
        }
    }

    /// Asks the loop to return from `run()`.
    func requestStop() {
        let mustSignal = queue.withLock { queue in
            SanitizerVisibleLock.acquired(self)
            defer { SanitizerVisibleLock.releasing(self) }
            queue.stopRequested = true
            defer { queue.signalled = true }
            return !queue.signalled
        }
        if mustSignal {
            signal()
        }
    }

    /// `true` once ``requestStop()`` was called and not yet consumed.
    var isStopRequested: Bool {
        queue.withLock { queue in
            SanitizerVisibleLock.acquired(self)
            defer { SanitizerVisibleLock.releasing(self) }
            return queue.stopRequested
        }
    }

    /// Clears a stop request (when `run()` returns).
    func clearStop() {
        queue.withLock { queue in
            SanitizerVisibleLock.acquired(self)
            defer { SanitizerVisibleLock.releasing(self) }
            queue.stopRequested = false
        }
    }

    /// Resets the `eventfd` and takes the queued tasks. Runs on the loop thread.
    func drain() -> [@Sendable () -> Void] {
        var counter: UInt64 = 0
        _ = try? Syscall.nonBlocking("read(eventfd)") {
            read(eventDescriptor, &counter, MemoryLayout<UInt64>.size)
        }
        return queue.withLock { queue in
            SanitizerVisibleLock.acquired(self)
            defer { SanitizerVisibleLock.releasing(self) }
            queue.signalled = false
            defer { queue.tasks = [] }
            return queue.tasks
        }
    }

    private func signal() {
        var one: UInt64 = 1
        // The counter cannot overflow (it is reset on every drain), so EAGAIN cannot occur;
        // the result is ignored because a full counter would still wake the loop.
        _ = try? Syscall.nonBlocking("write(eventfd)") {
            write(eventDescriptor, &one, MemoryLayout<UInt64>.size)
        }
    }
}

/// Wakes an ``EventLoop`` from any thread and runs a fixed body on the loop thread.
///
/// Wakes coalesce: calling ``wake()`` many times before the loop gets to it runs the body once.
/// Made by ``EventLoop/makeWaker(_:)``.
public final class Waker: Sendable {
    private let inbox: LoopInbox
    private let body: @Sendable () -> Void
    private let pending = Mutex(false)

    init(inbox: LoopInbox, body: @escaping @Sendable () -> Void) {
        self.inbox = inbox
        self.body = body
    }

    /// Makes the loop run the body soon. Thread-safe; cheap when a wake is already pending.
    public func wake() {
        let alreadyPending = pending.withLock { pending in
            SanitizerVisibleLock.acquired(self)
            defer {
                pending = true
                SanitizerVisibleLock.releasing(self)
            }
            return pending
        }
        if alreadyPending {
            return
        }
        inbox.enqueue { [self] in
            pending.withLock { pending in
                SanitizerVisibleLock.acquired(self)
                defer { SanitizerVisibleLock.releasing(self) }
                pending = false
            }
            body()
        }
    }
}
