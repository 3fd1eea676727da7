internal import CLinux
import Glibc
import Synchronization

/// A single-threaded, level-triggered epoll event loop with timers and cross-thread wakeups.
///
/// Everything except ``execute(_:)``, ``stop()``, ``makeWaker(_:)``, ``Waker/wake()`` and
/// ``inEventLoop`` must be called on the thread that runs ``run()`` (or, while the loop is not
/// running, on the one thread that owns it: the one setting it up or tearing it down). Handlers
/// run on that thread, one at a time; they may register and unregister descriptors, schedule
/// and cancel timers, and stop the loop. Debug builds check this on every loop-bound call
/// (``assertInEventLoop(file:line:)``); closures that cross threads onto the loop are
/// `@Sendable`.
///
/// An idle loop sleeps in `epoll_wait` until a descriptor is ready, the earliest timer is due,
/// or another thread wakes it: no polling.
// @unchecked Sendable: the loop is shared with other threads only for `execute`, `stop`,
// `makeWaker` and `inEventLoop`, which touch the `Mutex`-guarded inbox and the atomic loop thread.
// Every other member is loop-bound: used by one thread at a time (the one running `run()`, or
// the owner while it is not running), asserted in debug builds by `assertInEventLoop()`.
public final class EventLoop: @unchecked Sendable {
    /// A readiness handler.
    public typealias Handler = (Readiness) -> Void

    private final class Registration {
        let descriptor: Int32
        let token: UInt32
        var interest: Interest
        var handler: Handler

        init(descriptor: Int32, token: UInt32, interest: Interest, handler: @escaping Handler) {
            self.descriptor = descriptor
            self.token = token
            self.interest = interest
            self.handler = handler
        }
    }

    private let epollDescriptor: Int32
    private let inbox: LoopInbox
    private var registrations: [Int32: Registration] = [:]
    private var nextToken: UInt32 = 1
    private var timers = TimerQueue()
    private var soon: [() -> Void] = []
    private var stopped = false
    private var running = false
    private var signalDescriptors: [Int32] = []
    /// `pthread_self()` of the thread inside ``run()``; 0 while the loop is not running.
    private let loopThread = Atomic<UInt>(0)
    /// Scratch space shared by every read on this loop (only one handler runs at a time).
    let readBuffer: UnsafeMutableRawBufferPointer
    /// When true, ``turnWokeAt`` is read after every `epoll_wait` (a node's stage trace); off,
    /// the loop reads no clock for it.
    public var stampsTurns = false
    /// When the loop last returned from `epoll_wait` (only kept while ``stampsTurns``).
    public private(set) var turnWokeAt = MonotonicInstant(sinceBoot: .zero)

    /// The largest number of events taken from one `epoll_wait`.
    private static let batchSize = 256

    /// Creates a loop with its epoll instance and wakeup `eventfd`.
    public init() throws {
        epollDescriptor = try Syscall.call("epoll_create1") { epoll_create1(CLinux_EPOLL_CLOEXEC) }
        do {
            inbox = try LoopInbox()
        } catch {
            Syscall.close(epollDescriptor)
            throw error
        }
        readBuffer = .allocate(byteCount: 256 * 1024, alignment: 16)
        let inbox = self.inbox
        try register(fd: inbox.eventDescriptor, interest: .readable) { _ in
            for task in inbox.drain() {
                task()
            }
        }
    }

    deinit {
        for descriptor in signalDescriptors {
            Syscall.close(descriptor)
        }
        Syscall.close(epollDescriptor)
        readBuffer.deallocate()
    }

    /// The current instant on `CLOCK_MONOTONIC`, the clock timers use.
    public var now: MonotonicInstant { .now }

    /// Number of registered descriptors, including the loop's own wakeup descriptor.
    public var registrationCount: Int {
        assertInEventLoop()
        return registrations.count
    }

    // MARK: Descriptors

    /// Watches `fd` for `interest` and calls `handler` with what is ready.
    ///
    /// The caller keeps ownership of `fd` and must ``unregister(fd:)`` it before closing it.
    /// Registering a descriptor twice is a programming error.
    public func register(fd: Int32, interest: Interest, handler: @escaping Handler) throws {
        assertInEventLoop()
        precondition(registrations[fd] == nil, "descriptor \(fd) is already registered")
        let token = nextToken
        nextToken = nextToken == UInt32.max ? 1 : nextToken + 1
        try control(EPOLL_CTL_ADD, fd: fd, token: token, interest: interest)
        registrations[fd] = Registration(descriptor: fd, token: token, interest: interest, handler: handler)
    }

    /// Changes what a registered descriptor is watched for. An empty interest still reports
    /// hangup and error.
    public func setInterest(fd: Int32, _ interest: Interest) throws {
        assertInEventLoop()
        guard let registration = registrations[fd] else {
            preconditionFailure("setInterest: descriptor \(fd) is not registered")
        }
        guard registration.interest != interest else {
            return
        }
        try control(EPOLL_CTL_MOD, fd: fd, token: registration.token, interest: interest)
        registration.interest = interest
    }

    /// Replaces the handler of a registered descriptor.
    public func setHandler(fd: Int32, _ handler: @escaping Handler) {
        assertInEventLoop()
        guard let registration = registrations[fd] else {
            preconditionFailure("setHandler: descriptor \(fd) is not registered")
        }
        registration.handler = handler
    }

    /// Stops watching `fd` and drops its handler. Events for it still queued in the current
    /// batch are not delivered, not even to a later registration reusing the number.
    public func unregister(fd: Int32) {
        assertInEventLoop()
        guard registrations.removeValue(forKey: fd) != nil else {
            return
        }
        do {
            try control(EPOLL_CTL_DEL, fd: fd, token: 0, interest: [])
        } catch {
            // ENOENT/EPERM cannot happen for a descriptor we added; nothing else to undo.
        }
    }

    private func control(_ operation: Int32, fd: Int32, token: UInt32, interest: Interest) throws {
        var event = epoll_event()
        event.events = interest.epollEvents
        // The token in the upper half tells a registration from a later one reusing `fd`.
        event.data.u64 = UInt64(token) << 32 | UInt64(UInt32(bitPattern: fd))
        _ = try Syscall.call("epoll_ctl") { epoll_ctl(epollDescriptor, operation, fd, &event) }
    }

    /// The interest `fd` is registered with, or `nil` when it is not registered.
    public func interest(fd: Int32) -> Interest? {
        assertInEventLoop()
        return registrations[fd]?.interest
    }

    /// `true` when `fd` is registered.
    public func isRegistered(fd: Int32) -> Bool {
        assertInEventLoop()
        return registrations[fd] != nil
    }

    // MARK: Tasks and timers

    /// Runs `body` on the loop thread after `delay` (zero or less = on the next loop turn).
    @discardableResult
    public func schedule(after delay: Duration, _ body: @escaping () -> Void) -> TimerHandle {
        assertInEventLoop()
        return timers.schedule(deadline: now + max(.zero, delay), body)
    }

    /// Cancels a timer; returns `false` when it already ran or was cancelled.
    @discardableResult
    public func cancel(_ handle: TimerHandle) -> Bool {
        assertInEventLoop()
        return timers.cancel(handle)
    }

    /// Number of timers still scheduled.
    public var scheduledTimerCount: Int {
        assertInEventLoop()
        return timers.count
    }

    /// Runs `body` on the loop thread in this loop turn, after the current handler returns.
    /// Loop thread only (use ``execute(_:)`` from other threads).
    public func runSoon(_ body: @escaping () -> Void) {
        assertInEventLoop()
        soon.append(body)
    }

    /// Runs `body` on the loop thread soon. Thread-safe: `body` crosses threads, so it is
    /// `@Sendable`; it may still touch loop-bound state, because it runs on the loop.
    public func execute(_ body: @escaping @Sendable () -> Void) {
        inbox.enqueue(body)
    }

    /// Makes a ``Waker`` whose ``Waker/wake()`` (from any thread) runs `body` on the loop thread.
    /// Thread-safe.
    public func makeWaker(_ body: @escaping @Sendable () -> Void) -> Waker {
        Waker(inbox: inbox, body: body)
    }

    // MARK: Running

    /// Runs the loop on the calling thread until ``stop()``.
    public func run() {
        assertInEventLoop()
        precondition(!running, "EventLoop.run() is already running")
        running = true
        loopThread.store(UInt(pthread_self()), ordering: .releasing)
        defer {
            loopThread.store(0, ordering: .releasing)
            running = false
            stopped = false
            inbox.clearStop()
        }
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: Self.batchSize)
        defer { events.deallocate() }
        while !mustStop {
            runDueTimers()
            runSoonTasks()
            if mustStop {
                break
            }
            let count = waitForEvents(events, timeout: nextTimeout())
            if stampsTurns { turnWokeAt = .now }
            for index in 0..<count {
                dispatch(events[index])
                if mustStop {
                    break
                }
            }
            runSoonTasks()
        }
    }

    /// Makes ``run()`` return after the current handler (timers already due in this turn still
    /// run). Thread-safe.
    public func stop() {
        inbox.requestStop()
    }

    /// Whether ``stop()`` was called, from this thread or another.
    private var mustStop: Bool {
        if !stopped && inbox.isStopRequested {
            stopped = true
        }
        return stopped
    }

    private func nextTimeout() -> Int32 {
        if !soon.isEmpty {
            return 0
        }
        guard let deadline = timers.nextDeadline() else {
            return -1
        }
        return (deadline - now).pollTimeout
    }

    private func waitForEvents(_ events: UnsafeMutablePointer<epoll_event>, timeout: Int32) -> Int {
        let result = epoll_wait(epollDescriptor, events, Int32(Self.batchSize), timeout)
        if result >= 0 {
            return Int(result)
        }
        let code = Glibc.errno
        if code == EINTR {
            return 0
        }
        preconditionFailure("\(Syscall.failure("epoll_wait", code))")
    }

    private func dispatch(_ event: epoll_event) {
        let data = event.data.u64
        let fd = Int32(bitPattern: UInt32(truncatingIfNeeded: data))
        let token = UInt32(truncatingIfNeeded: data >> 32)
        // An earlier handler in this batch may have unregistered (and closed) this descriptor,
        // and the number may already belong to a new registration: the token tells them apart.
        guard let registration = registrations[fd], registration.token == token else {
            return
        }
        let readiness = Readiness(epollEvents: event.events).filtered(by: registration.interest)
        if !readiness.isEmpty {
            registration.handler(readiness)
        }
    }

    private func runDueTimers() {
        let due = timers.popExpired(now: now)
        // Every popped timer runs, even after a stop request, so none is lost.
        for body in due {
            body()
        }
    }

    private func runSoonTasks() {
        while !soon.isEmpty {
            let tasks = soon
            soon = []
            for task in tasks {
                task()
            }
        }
    }

    // MARK: Thread affinity

    /// `true` when the calling thread is the one running ``run()``. Thread-safe.
    public var inEventLoop: Bool {
        let thread = loopThread.load(ordering: .acquiring)
        return thread != 0 && thread == UInt(pthread_self())
    }

    /// `true` when the calling thread may use loop-bound members: it runs the loop, or the loop
    /// is not running (then its owner sets it up or tears it down). Thread-safe.
    public var mayUseLoopBoundState: Bool {
        let thread = loopThread.load(ordering: .acquiring)
        return thread == 0 || thread == UInt(pthread_self())
    }

    /// Traps, in every build, when called off the loop's thread while the loop is running.
    public func preconditionInEventLoop(file: StaticString = #fileID, line: UInt = #line) {
        precondition(mayUseLoopBoundState, "called off the event loop's thread", file: file, line: line)
    }

    /// Traps, in debug builds only, when called off the loop's thread while the loop is
    /// running. Every loop-bound member calls it, and so should loop-bound types built on the
    /// loop (``StreamChannel``, ``Acceptor``).
    @inline(__always)
    public func assertInEventLoop(file: StaticString = #fileID, line: UInt = #line) {
        assert(mayUseLoopBoundState, "called off the event loop's thread", file: file, line: line)
    }

    // MARK: Signals

    /// Delivers `signals` to `handler` on the loop thread through a `signalfd`.
    ///
    /// The signals must already be blocked in every thread (``Signals/block(_:)`` first thing in
    /// `main`), otherwise their default action still runs.
    public func onSignal(_ signals: [Int32], _ handler: @escaping (Int32) -> Void) throws {
        assertInEventLoop()
        var mask = Signals.set(signals)
        let descriptor = try Syscall.call("signalfd") {
            signalfd(-1, &mask, CLinux_SFD_CLOEXEC | CLinux_SFD_NONBLOCK)
        }
        signalDescriptors.append(descriptor)
        try register(fd: descriptor, interest: .readable) { _ in
            var info = signalfd_siginfo()
            let size = MemoryLayout<signalfd_siginfo>.size
            while true {
                let result = try? Syscall.nonBlocking("read(signalfd)") { read(descriptor, &info, size) }
                guard case .value(let count) = result, count == size else {
                    return
                }
                handler(Int32(bitPattern: info.ssi_signo))
            }
        }
    }
}
