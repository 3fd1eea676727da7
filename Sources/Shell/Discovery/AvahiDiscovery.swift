internal import CAvahi
import Dispatch
import EventLoopIO
import Glibc
import Synchronization

/// Publishes one DNS-SD service and browses for service types through avahi-daemon
/// (libavahi-client), surviving daemon restarts and name collisions.
///
/// Threading follows Avahi's own rule for its threaded event loop (`avahi-common/thread-watch.h`):
/// "After the thread has started you must make sure to access the event loop object
/// (AvahiThreadedPoll, AvahiPoll and all its associated objects) synchronized, i.e. with proper
/// locking. ... event loop callback functions are called from the event loop [...] thread with
/// that lock held". Every Avahi call made for a public method is
/// wrapped in `avahi_threaded_poll_lock`/`unlock`; everything else happens in callbacks on
/// Avahi's thread. Callbacks copy what they need out of C memory and report it through
/// `onEvent`, which runs on Avahi's thread and must only hand the event over (copy it, wake an
/// event loop).
///
/// The public methods never wait for that lock: Avahi's thread holds it through every D-Bus call
/// it makes, and a hung avahi-daemon keeps it there until D-Bus gives up (25 s). `publish`,
/// `unpublish`, `browse` and `rebrowse` queue their request on a serial worker of their own and
/// return at once, so an event loop calling them keeps turning; the worker takes the lock and
/// carries the requests out in the order they were made. Only `stop()` waits for the worker.
// @unchecked Sendable: the lifecycle is a `Mutex`, Avahi's thread an `Atomic` and the request
// queue a serial `DispatchQueue`; every other stored property is touched only on that queue with
// Avahi's poll lock held (`withAvahiLock`), in callbacks on Avahi's thread (which hold that lock),
// or while no poll thread runs (before `start`, after `stop`, in `deinit`).
public final class AvahiDiscovery: @unchecked Sendable {
    /// The address family services found by browsing are resolved to.
    public enum AddressFamily: Sendable {
        /// IPv4 addresses (the default).
        case ipv4
        /// IPv6 addresses.
        case ipv6
        /// Whatever the responder offers.
        case any
    }

    enum Phase {
        case idle
        case running(OpaquePointer)
        case stopped
    }

    /// Where the Avahi client is.
    enum ClientPhase: Equatable {
        /// No client (not created yet, or released).
        case none
        /// Waiting for avahi-daemon to appear on D-Bus.
        case connecting
        /// The daemon is registering its host name (after start or a host name collision).
        case registering
        /// AVAHI_CLIENT_S_RUNNING: services can be published and browsed.
        case running
        /// Unusable; its objects must not be touched until the reconnect timer frees it.
        case failed
    }

    var clientRunning: Bool { clientPhase == .running }

    let onEvent: @Sendable (DiscoveryEvent) -> Void

    /// Lifecycle; never held while waiting for the poll lock, so `start()` never waits on Avahi.
    /// Every critical section on it begins with `SanitizerVisibleLock.acquired(self)` and ends
    /// with `releasing(self)`: on Linux a contended `Mutex` is taken with a priority-inheriting
    /// futex (`FUTEX_LOCK_PI`) inside the kernel, which ThreadSanitizer does not see, so without
    /// them every access made after waiting for the lock reads as a race with the previous
    /// holder's (the discovery tests on a simulated LAN report `start()` and the request worker).
    let lifecycle = Mutex<Phase>(.idle)
    /// The serial worker that carries out the public methods' requests under the poll lock.
    let requests = DispatchQueue(label: "AvahiDiscovery.requests")
    /// `pthread_self()` of Avahi's thread, recorded by the first callback.
    let pollThread = Atomic<UInt>(0)

    // Everything below belongs to Avahi's thread: touched only with the poll lock held, in
    // callbacks, or while no thread runs (before `start`, after `stop`).

    /// The threaded poll's `AvahiPoll` interface (timers).
    var pollAPI: UnsafePointer<AvahiPoll>?
    /// Timer that (re)creates the client.
    var reconnectTimer: OpaquePointer?
    var backoff = ReconnectBackoff(initial: .seconds(1), maximum: .seconds(30))
    /// The current client; after a failure it stays here until the reconnect timer frees it.
    var client: OpaquePointer?
    var clientPhase = ClientPhase.none
    /// The last availability reported, so each transition is reported once.
    var daemonReported: Bool?

    /// What to publish, and the name it currently goes by (after collisions).
    var announcement: ServiceAnnouncement?
    var publishedName: String?
    var entryGroup: OpaquePointer?

    /// Service types to browse for, in the order asked, with their resolution family.
    var browseTypes: [(type: String, family: AddressFamily)] = []
    var browsers: [String: OpaquePointer] = [:]
    var resolvers: [ServiceKey: OpaquePointer] = [:]
    /// Resolvers that have not answered yet: their first answer is taken as it is.
    var freshResolvers: Set<OpaquePointer> = []
    var services = DiscoveredServices()

    /// Creates a stopped discovery object; nothing happens until `start()`. `onEvent` is
    /// called on Avahi's thread.
    public init(onEvent: @escaping @Sendable (DiscoveryEvent) -> Void) {
        self.onEvent = onEvent
    }

    deinit {
        // Every queued request holds a reference: none is left, and none runs now but perhaps the
        // one whose release ended here (on the worker, which must not wait for itself).
        stopAvahi()
    }

    var userdata: UnsafeMutableRawPointer {
        Unmanaged.passUnretained(self).toOpaque()
    }

    /// Starts Avahi's thread and connects to avahi-daemon over D-Bus. Does not fail because the
    /// daemon is absent: the client waits for it (`daemonUnavailable`, then `daemonAvailable`).
    /// Throws only when the event loop cannot be created, or when called twice or after `stop()`.
    /// Does not wait for the daemon: the client is created on Avahi's thread.
    public func start() throws {
        try lifecycle.withLock { phase in
            SanitizerVisibleLock.acquired(self)
            defer { SanitizerVisibleLock.releasing(self) }
            switch phase {
            case .running:
                throw DiscoveryError(code: .misuse, message: "already started", context: "AvahiDiscovery.start")
            case .stopped:
                throw DiscoveryError(
                    code: .misuse, message: "cannot start after stop()",
                    context: "AvahiDiscovery.start")
            case .idle:
                break
            }
            guard let poll = avahi_threaded_poll_new() else {
                throw DiscoveryError(
                    code: .avahi, message: "cannot create Avahi's event loop",
                    context: "avahi_threaded_poll_new")
            }
            let api = avahi_threaded_poll_get(poll)!
            pollAPI = api
            // The first connection attempt runs on Avahi's thread, like every later one.
            var now = timeval()
            gettimeofday(&now, nil)
            reconnectTimer = api.pointee.timeout_new(api, &now, reconnectTimerFired, userdata)
            let result = avahi_threaded_poll_start(poll)
            if result < 0 {
                if let timer = reconnectTimer {
                    api.pointee.timeout_free(timer)
                }
                reconnectTimer = nil
                pollAPI = nil
                avahi_threaded_poll_free(poll)
                throw DiscoveryError(
                    code: .avahi, avahiError: result, message: avahiErrorText(result),
                    context: "avahi_threaded_poll_start")
            }
            phase = .running(poll)
        }
    }

    /// Publishes `announcement`, replacing any earlier one. It is remembered: registered as soon
    /// as the daemon is available and again after every reconnection. An invalid announcement
    /// is reported as `publishFailed` (on the calling thread) and not published. Returns at once;
    /// the service is registered on the request worker.
    public func publish(_ announcement: ServiceAnnouncement) {
        do {
            try announcement.validate()
        } catch {
            onEvent(.publishFailed(reason: "\(error)"))
            return
        }
        enqueue { [self] in
            self.announcement = announcement
            self.publishedName = announcement.name
            if clientRunning {
                registerAnnouncement(replacing: true)
            }
        }
    }

    /// Withdraws the published service (Avahi sends goodbye packets) and forgets it. Returns at
    /// once; the service is withdrawn on the request worker.
    public func unpublish() {
        enqueue { [self] in
            announcement = nil
            publishedName = nil
            if let group = entryGroup, clientPhase != .failed {
                avahi_entry_group_free(group)
            }
            entryGroup = nil
        }
    }

    /// Browses for services of `type` (for example `_pos._tcp`) and resolves each one found
    /// to `family` addresses. Remembered, and restarted after every reconnection. Returns at once;
    /// the browser is started on the request worker.
    public func browse(type: String, addressFamily: AddressFamily = .ipv4) {
        enqueue { [self] in
            guard !browseTypes.contains(where: { $0.type == type }) else {
                return
            }
            browseTypes.append((type, addressFamily))
            if clientRunning {
                startBrowser(type: type, family: addressFamily)
            }
        }
    }

    /// Browses for `type` afresh: frees its browser and the resolvers of what it found, forgets
    /// their resolutions without reporting them lost, and browses again, so that every service
    /// still listed (cached ones too) is resolved anew and reported with `serviceFound`. Does
    /// nothing for a type that is not browsed. Returns at once; the browse restarts on the request
    /// worker.
    public func rebrowse(type: String) {
        enqueue { [self] in
            guard let family = browseTypes.first(where: { $0.type == type })?.family else {
                return
            }
            services.forget(type: type)
            // A failed client's objects must not be touched: the reconnect timer frees them all.
            guard clientPhase != .failed else {
                return
            }
            if let browser = browsers.removeValue(forKey: type) {
                avahi_service_browser_free(browser)
            }
            for key in resolvers.keys where key.type == type {
                if let resolver = resolvers.removeValue(forKey: key) {
                    freshResolvers.remove(resolver)
                    avahi_service_resolver_free(resolver)
                }
            }
            if clientRunning {
                startBrowser(type: type, family: family)
            }
        }
    }

    /// Withdraws the published service, frees every Avahi object and stops Avahi's thread, after
    /// every request made before it. Waits for all that: with avahi-daemon hung, until D-Bus gives
    /// up on the call Avahi's thread is stuck in (25 s). Call it where waiting is allowed (a node
    /// calls it once its event loop has returned), never from `onEvent`. Safe to call more than once.
    public func stop() {
        precondition(!isOnPollThread, "AvahiDiscovery.stop() cannot run on Avahi's own thread (from onEvent)")
        dispatchPrecondition(condition: .notOnQueue(requests))
        requests.sync { stopAvahi() }
    }

    /// `stop()` itself: on the request worker, or in `deinit` when no request is left.
    private func stopAvahi() {
        let running: OpaquePointer? = lifecycle.withLock { phase in
            SanitizerVisibleLock.acquired(self)
            defer { SanitizerVisibleLock.releasing(self) }
            defer { phase = .stopped }
            guard case .running(let poll) = phase else {
                return nil
            }
            return poll
        }
        // Stopped already: `start()` refuses from now on, and the requests after this one run
        // after it, so nothing else touches the poll while this waits for its lock.
        if let poll = running {
            avahi_threaded_poll_lock(poll)
            releaseClient()
            announcement = nil
            publishedName = nil
            browseTypes.removeAll()
            if let api = pollAPI, let timer = reconnectTimer {
                api.pointee.timeout_free(timer)
            }
            reconnectTimer = nil
            avahi_threaded_poll_unlock(poll)
            avahi_threaded_poll_stop(poll)
            avahi_threaded_poll_free(poll)
            pollAPI = nil
            pollThread.store(0, ordering: .relaxed)
        }
    }

    // MARK: Locking

    var isOnPollThread: Bool {
        let thread = pollThread.load(ordering: .relaxed)
        return thread != 0 && thread == UInt(pthread_self())
    }

    /// Records Avahi's thread; called at the top of every callback.
    func enteredCallback() {
        if pollThread.load(ordering: .relaxed) == 0 {
            pollThread.store(UInt(pthread_self()), ordering: .relaxed)
        }
    }

    /// Queues `body` on the request worker, to run there with the poll lock held.
    private func enqueue(_ body: @escaping @Sendable () -> Void) {
        requests.async { self.withAvahiLock(body) }
    }

    /// Runs `body` with the poll lock held, or when no poll thread runs. Only on the request
    /// worker: the poll it locks is freed only there (`stop()`), so the lifecycle need not stay
    /// locked while this waits for Avahi's thread; it does stay locked while no thread runs, so
    /// that `start()` cannot start one under `body`.
    private func withAvahiLock(_ body: () -> Void) {
        dispatchPrecondition(condition: .onQueue(requests))
        let running: OpaquePointer? = lifecycle.withLock { phase in
            SanitizerVisibleLock.acquired(self)
            defer { SanitizerVisibleLock.releasing(self) }
            guard case .running(let poll) = phase else {
                body()
                return nil
            }
            return poll
        }
        if let poll = running {
            avahi_threaded_poll_lock(poll)
            body()
            avahi_threaded_poll_unlock(poll)
        }
    }

    func emit(_ event: DiscoveryEvent) {
        onEvent(event)
    }
}
