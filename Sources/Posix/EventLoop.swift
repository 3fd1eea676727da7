import Glibc

/// A single-threaded, level-triggered epoll event loop with timers and cross-thread wakeups.
///
/// Everything except ``execute(_:)``, ``stop()`` and ``Waker/wake()`` must be called on the
/// thread that runs ``run()`` (or, before `run()` starts, on the thread that will run it).
/// Handlers run on that thread, one at a time; they may register and unregister descriptors,
/// schedule and cancel timers, and stop the loop.
///
/// An idle loop sleeps in `epoll_wait` until a descriptor is ready, the earliest timer is due,
/// or another thread wakes it: no polling.
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
    /// Scratch space shared by every read on this loop (only one handler runs at a time).
    let readBuffer: UnsafeMutableRawBufferPointer

    /// The largest number of events taken from one `epoll_wait`.
    private static let batchSize = 256

    /// Creates a loop with its epoll instance and wakeup `eventfd`.
    public init() throws {
        epollDescriptor = try Syscall.call("epoll_create1") { LinuxCalls.epollCreate1(LinuxCalls.EPOLL_CLOEXEC) }
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

    /// Monotonic milliseconds (`CLOCK_MONOTONIC`), the clock timers use.
    public var now: Int64 { MonotonicClock.milliseconds() }

    /// Number of registered descriptors, including the loop's own wakeup descriptor.
    public var registrationCount: Int { registrations.count }

    // MARK: Descriptors

    /// Watches `fd` for `interest` and calls `handler` with what is ready.
    ///
    /// The caller keeps ownership of `fd` and must ``unregister(fd:)`` it before closing it.
    /// Registering a descriptor twice is a programming error.
    public func register(fd: Int32, interest: Interest, handler: @escaping Handler) throws {
        precondition(registrations[fd] == nil, "descriptor \(fd) is already registered")
        let token = nextToken
        nextToken = nextToken == UInt32.max ? 1 : nextToken + 1
        try control(LinuxCalls.EPOLL_CTL_ADD, fd: fd, token: token, interest: interest)
        registrations[fd] = Registration(descriptor: fd, token: token, interest: interest, handler: handler)
    }

    /// Changes what a registered descriptor is watched for. An empty interest still reports
    /// hangup and error.
    public func setInterest(fd: Int32, _ interest: Interest) throws {
        guard let registration = registrations[fd] else {
            preconditionFailure("setInterest: descriptor \(fd) is not registered")
        }
        guard registration.interest != interest else {
            return
        }
        try control(LinuxCalls.EPOLL_CTL_MOD, fd: fd, token: registration.token, interest: interest)
        registration.interest = interest
    }

    /// Replaces the handler of a registered descriptor.
    public func setHandler(fd: Int32, _ handler: @escaping Handler) {
        guard let registration = registrations[fd] else {
            preconditionFailure("setHandler: descriptor \(fd) is not registered")
        }
        registration.handler = handler
    }

    /// Stops watching `fd` and drops its handler. Events for it still queued in the current
    /// batch are not delivered, not even to a later registration reusing the number.
    public func unregister(fd: Int32) {
        guard registrations.removeValue(forKey: fd) != nil else {
            return
        }
        do {
            try control(LinuxCalls.EPOLL_CTL_DEL, fd: fd, token: 0, interest: [])
        } catch {
            // ENOENT/EPERM cannot happen for a descriptor we added; nothing else to undo.
        }
    }

    private func control(_ operation: Int32, fd: Int32, token: UInt32, interest: Interest) throws {
        var event: (UInt64, UInt64) = (0, 0)
        let epoll = epollDescriptor
        try withUnsafeMutableBytes(of: &event) { raw in
            let base = raw.baseAddress!
            // The token in the upper half tells a registration from a later one reusing `fd`.
            let data = UInt64(token) << 32 | UInt64(UInt32(bitPattern: fd))
            LinuxCalls.EpollEvent.store(events: interest.epollEvents, data: data, at: base)
            _ = try Syscall.call("epoll_ctl") { LinuxCalls.epollCtl(epoll, operation, fd, base) }
        }
    }

    /// The interest `fd` is registered with, or `nil` when it is not registered.
    public func interest(fd: Int32) -> Interest? {
        registrations[fd]?.interest
    }

    /// `true` when `fd` is registered.
    public func isRegistered(fd: Int32) -> Bool {
        registrations[fd] != nil
    }

    // MARK: Tasks and timers

    /// Runs `body` on the loop thread after `milliseconds` (0 = on the next loop turn).
    @discardableResult
    public func schedule(after milliseconds: Int64, _ body: @escaping () -> Void) -> TimerHandle {
        timers.schedule(deadline: now + max(0, milliseconds), body)
    }

    /// Runs `body` on the loop thread after `delay` (zero or less = on the next loop turn).
    @discardableResult
    public func schedule(after delay: Duration, _ body: @escaping () -> Void) -> TimerHandle {
        schedule(after: delay.wholeMilliseconds, body)
    }

    /// Cancels a timer; returns `false` when it already ran or was cancelled.
    @discardableResult
    public func cancel(_ handle: TimerHandle) -> Bool {
        timers.cancel(handle)
    }

    /// Number of timers still scheduled.
    public var scheduledTimerCount: Int { timers.count }

    /// Runs `body` on the loop thread in this loop turn, after the current handler returns.
    /// Loop thread only (use ``execute(_:)`` from other threads).
    public func runSoon(_ body: @escaping () -> Void) {
        soon.append(body)
    }

    /// Runs `body` on the loop thread soon. Thread-safe.
    public func execute(_ body: @escaping () -> Void) {
        inbox.enqueue(body)
    }

    /// Makes a ``Waker`` whose ``Waker/wake()`` (from any thread) runs `body` on the loop thread.
    public func makeWaker(_ body: @escaping () -> Void) -> Waker {
        Waker(inbox: inbox, body: body)
    }

    // MARK: Running

    /// Runs the loop on the calling thread until ``stop()``.
    public func run() {
        precondition(!running, "EventLoop.run() is already running")
        running = true
        defer {
            running = false
            stopped = false
            inbox.clearStop()
        }
        let events = UnsafeMutableRawPointer.allocate(
            byteCount: Self.batchSize * LinuxCalls.EpollEvent.stride, alignment: 8)
        defer { events.deallocate() }
        while !mustStop {
            runDueTimers()
            runSoonTasks()
            if mustStop {
                break
            }
            let count = waitForEvents(events, timeout: nextTimeout())
            for index in 0..<count {
                dispatch(events + index * LinuxCalls.EpollEvent.stride)
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
        return Int32(clamping: max(0, deadline - now))
    }

    private func waitForEvents(_ events: UnsafeMutableRawPointer, timeout: Int32) -> Int {
        let result = LinuxCalls.epollWait(epollDescriptor, events, Int32(Self.batchSize), timeout)
        if result >= 0 {
            return Int(result)
        }
        let code = Glibc.errno
        if code == EINTR {
            return 0
        }
        preconditionFailure("\(Syscall.failure("epoll_wait", code))")
    }

    private func dispatch(_ event: UnsafeMutableRawPointer) {
        let data = LinuxCalls.EpollEvent.data(at: event)
        let fd = Int32(bitPattern: UInt32(truncatingIfNeeded: data))
        let token = UInt32(truncatingIfNeeded: data >> 32)
        // An earlier handler in this batch may have unregistered (and closed) this descriptor,
        // and the number may already belong to a new registration: the token tells them apart.
        guard let registration = registrations[fd], registration.token == token else {
            return
        }
        let readiness = Readiness(epollEvents: LinuxCalls.EpollEvent.events(at: event)).filtered(by: registration.interest)
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

    // MARK: Signals

    /// Delivers `signals` to `handler` on the loop thread through a `signalfd`.
    ///
    /// The signals must already be blocked in every thread (``Signals/block(_:)`` first thing in
    /// `main`), otherwise their default action still runs.
    public func onSignal(_ signals: [Int32], _ handler: @escaping (Int32) -> Void) throws {
        var mask = Signals.set(signals)
        let descriptor = try Syscall.call("signalfd") {
            LinuxCalls.signalfd(-1, &mask, LinuxCalls.SFD_CLOEXEC | LinuxCalls.SFD_NONBLOCK)
        }
        signalDescriptors.append(descriptor)
        try register(fd: descriptor, interest: .readable) { _ in
            var info = [UInt8](repeating: 0, count: LinuxCalls.signalInfoSize)
            while true {
                let result = try? info.withUnsafeMutableBytes { raw in
                    try Syscall.nonBlocking("read(signalfd)") { read(descriptor, raw.baseAddress, raw.count) }
                }
                guard case .value(let count) = result, count == LinuxCalls.signalInfoSize else {
                    return
                }
                let number = info.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 0, as: UInt32.self) }
                handler(Int32(bitPattern: number))
            }
        }
    }
}
