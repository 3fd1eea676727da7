import EventLoopIO
import Foundation
import Logging

/// Tells the service manager (systemd, `Type=notify`) how the daemon is doing, as sd_notify(3)
/// describes: `READY=1` once the node serves, `STOPPING=1` when it begins to shut down,
/// `WATCHDOG=1` at half of `WATCHDOG_USEC` while its event loop turns, and `STATUS=` lines.
/// Does nothing when `NOTIFY_SOCKET` is not set (the daemon was not started by systemd).
/// Used on the node's event loop only.
final class ServiceManager {
    /// How long a master waits to be published before it reports ready anyway (with a status
    /// saying it is not published): systemd gives a service 90 s to start by default, and a
    /// master serves terminals that name it with `--master` even while Avahi hangs.
    static let publicationWaitLimit: Duration = .seconds(30)

    private let socket: NotifySocket?
    private let watchdogInterval: Duration?
    private let loop: EventLoop
    private var logger: Logger
    private var watchdogTimer: TimerHandle?
    private var readinessTimer: TimerHandle?
    private var sendFailureLogged = false
    /// True once `READY=1` was sent.
    private(set) var isReady = false
    private(set) var isStopping = false

    /// The service manager named by the environment (`NOTIFY_SOCKET`, `WATCHDOG_USEC`,
    /// `WATCHDOG_PID`) for the node on `loop`.
    init(loop: EventLoop, logger: Logger, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.loop = loop
        self.logger = logger
        var socket: NotifySocket?
        if let path = environment["NOTIFY_SOCKET"], !path.isEmpty {
            do {
                socket = try NotifySocket(path: path)
            } catch {
                logger.warning("systemd.notify_failed", metadata: ["socket": "\(path)", "error": "\(error)"])
            }
        }
        self.socket = socket
        watchdogInterval = socket == nil ? nil : Self.watchdogInterval(environment)
    }

    /// Half of `WATCHDOG_USEC` when the watchdog is on for this process (sd_watchdog_enabled(3):
    /// `WATCHDOG_PID`, when set, must be this process's id).
    static func watchdogInterval(_ environment: [String: String]) -> Duration? {
        guard let text = environment["WATCHDOG_USEC"], let usec = UInt64(text), usec > 0 else { return nil }
        if let pid = environment["WATCHDOG_PID"], !pid.isEmpty, pid != String(getpid()) { return nil }
        return .microseconds(Int64(min(usec / 2, UInt64(Int64.max))))
    }

    /// Starts the watchdog pings (when asked for): each is sent by a timer of the event loop,
    /// so a loop that hangs stops pinging and systemd restarts the daemon.
    func startWatchdog() {
        guard let interval = watchdogInterval, watchdogTimer == nil else { return }
        logger.debug("systemd.watchdog", metadata: ["interval_ms": "\(interval.wholeMilliseconds)"])
        scheduleWatchdog(interval)
    }

    private func scheduleWatchdog(_ interval: Duration) {
        watchdogTimer = loop.schedule(after: interval) { [weak self] in
            guard let self else { return }
            self.send("WATCHDOG=1")
            self.scheduleWatchdog(interval)
        }
    }

    /// Reports the node ready with a status line; once ready, only the status line is sent.
    func ready(status: String) {
        if let timer = readinessTimer {
            loop.cancel(timer)
            readinessTimer = nil
        }
        guard !isStopping else { return }
        guard !isReady else {
            self.status(status)
            return
        }
        isReady = true
        send("READY=1\nSTATUS=\(status)")
        if socket != nil { logger.debug("systemd.ready", metadata: ["status": "\(status)"]) }
    }

    /// Reports the node ready after `limit` unless `ready` came first; `status()` gives the
    /// status line at that time.
    func readyAtTheLatest(after limit: Duration, status: @escaping () -> String) {
        guard socket != nil, !isReady, readinessTimer == nil else { return }
        readinessTimer = loop.schedule(after: limit) { [weak self] in
            self?.readinessTimer = nil
            self?.ready(status: status())
        }
    }

    /// A status line (`systemctl status` shows it).
    func status(_ text: String) {
        send("STATUS=\(text)")
    }

    /// Reports that the node is shutting down; the watchdog keeps pinging while the loop runs.
    func stopping() {
        guard !isStopping else { return }
        isStopping = true
        if let timer = readinessTimer { loop.cancel(timer) }
        readinessTimer = nil
        send("STOPPING=1\nSTATUS=stopping")
    }

    /// Stops the watchdog pings.
    func stop() {
        if let timer = watchdogTimer { loop.cancel(timer) }
        watchdogTimer = nil
    }

    private func send(_ message: String) {
        guard let socket else { return }
        do {
            try socket.send(message)
        } catch {
            // Logged once: a service manager that went away is not worth a line per ping.
            if !sendFailureLogged {
                sendFailureLogged = true
                logger.warning("systemd.notify_failed", metadata: ["socket": "\(socket.path)", "error": "\(error)"])
            }
        }
    }
}
