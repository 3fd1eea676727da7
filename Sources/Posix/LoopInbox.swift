import Foundation
import Glibc

/// The thread-safe way into an event loop: a locked task queue plus an `eventfd` that makes
/// `epoll_wait` return.
///
/// The inbox outlives its loop if a ``Waker`` still holds it, so waking a loop that is gone
/// writes to a still-open `eventfd` and does nothing else.
final class LoopInbox: @unchecked Sendable {
    let eventDescriptor: Int32
    private let lock = NSLock()
    private var tasks: [() -> Void] = []
    private var signalled = false
    private var stopRequested = false

    init() throws {
        eventDescriptor = try Syscall.call("eventfd") {
            LinuxCalls.eventfd(0, LinuxCalls.EFD_CLOEXEC | LinuxCalls.EFD_NONBLOCK)
        }
    }

    deinit {
        Syscall.close(eventDescriptor)
    }

    /// Queues `task` for the loop thread and wakes the loop (once per batch of tasks).
    func enqueue(_ task: @escaping () -> Void) {
        lock.lock()
        tasks.append(task)
        let mustSignal = !signalled
        signalled = true
        lock.unlock()
        if mustSignal {
            signal()
        }
    }

    /// Asks the loop to return from `run()`.
    func requestStop() {
        lock.lock()
        stopRequested = true
        let mustSignal = !signalled
        signalled = true
        lock.unlock()
        if mustSignal {
            signal()
        }
    }

    /// `true` once ``requestStop()`` was called and not yet consumed.
    var isStopRequested: Bool {
        lock.lock()
        defer { lock.unlock() }
        return stopRequested
    }

    /// Clears a stop request (when `run()` returns).
    func clearStop() {
        lock.lock()
        stopRequested = false
        lock.unlock()
    }

    /// Resets the `eventfd` and takes the queued tasks. Runs on the loop thread.
    func drain() -> [() -> Void] {
        var counter: UInt64 = 0
        _ = try? Syscall.nonBlocking("read(eventfd)") {
            read(eventDescriptor, &counter, MemoryLayout<UInt64>.size)
        }
        lock.lock()
        defer { lock.unlock() }
        signalled = false
        let taken = tasks
        tasks = []
        return taken
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
public final class Waker: @unchecked Sendable {
    private let inbox: LoopInbox
    private let body: () -> Void
    private let lock = NSLock()
    private var pending = false

    init(inbox: LoopInbox, body: @escaping () -> Void) {
        self.inbox = inbox
        self.body = body
    }

    /// Makes the loop run the body soon. Thread-safe; cheap when a wake is already pending.
    public func wake() {
        lock.lock()
        let alreadyPending = pending
        pending = true
        lock.unlock()
        if alreadyPending {
            return
        }
        inbox.enqueue { [self] in
            lock.lock()
            pending = false
            lock.unlock()
            body()
        }
    }
}
