import Discovery
import EventLoopIO
import Foundation
import Logging

/// An OrderSync node: one event loop and the role it plays on it, `ordersync master` or
/// `ordersync slave` (and, once promotion exists, a candidate becoming master).
///
/// The role is a state (``NodeRoles``): a node starts one, and leaving it is a transition that
/// closes the role's links and front-ends and keeps the loop; only a stop ends the loop. Each
/// role carries its own state (today's ``MasterNode`` and ``SlaveNode``).
///
/// Loop-bound and not `Sendable`: built and run on one thread; other threads use
/// ``shutdownHandle``.
public final class Node {
    /// A role and its state.
    public enum Role {
        /// Serves the store: terminals, the journal, publishing on the LAN.
        case master(MasterNode)
        /// Keeps a replica and forwards this terminal's writes to the master.
        case slave(SlaveNode)
    }

    private let loop: EventLoop
    private let firstRole: Role
    private var roles = NodeRoles<Role>()
    /// The role that left last, finished once the loop returned.
    private var leftRole: Role?
    /// A role that failed to start in a transition, thrown by `run()`.
    private var startFailure: (any Error)?

    /// A node that will play `role` on the role's loop.
    public init(_ role: Role) {
        firstRole = role
        loop = role.loop
    }

    /// A node on `loop` (not running yet) in the role `configuration.role` names, over
    /// `dataDirectory`, with `discovery` (nil: none; a slave with `--master` uses none anyway).
    public convenience init(
        configuration: NodeConfiguration, loop: EventLoop, dataDirectory: DataDirectory,
        discovery: (any ServiceDiscovery)?, logger: Logger,
        reconnectJitter: ReconnectBackoff.Jitter = .downToHalf()
    ) throws {
        switch configuration.role {
        case .master:
            self.init(
                .master(
                    try MasterNode(
                        configuration: configuration, loop: loop, dataDirectory: dataDirectory, discovery: discovery,
                        logger: logger)))
        case .slave:
            self.init(
                .slave(
                    try SlaveNode(
                        configuration: configuration, loop: loop, dataDirectory: dataDirectory, discovery: discovery,
                        logger: logger, reconnectJitter: reconnectJitter)))
        }
    }

    /// The node for `ordersync master` or `ordersync slave`: prepares the process (signals),
    /// claims the data directory and uses Avahi (a slave with `--master` does not).
    public convenience init(configuration: NodeConfiguration, logger: Logger) throws {
        switch configuration.role {
        case .master: self.init(.master(try MasterNode(configuration: configuration, logger: logger)))
        case .slave: self.init(.slave(try SlaveNode(configuration: configuration, logger: logger)))
        }
    }

    /// The role played now; nil before `run()` and once stopped.
    public var role: Role? { roles.current }

    /// The terminals' port of a master (nil for a slave).
    public var masterPort: UInt16? {
        if case .master(let master) = firstRole { return master.port }
        return nil
    }

    /// What other threads use to ask the node to stop (`Sendable`). Take it on the thread that
    /// owns the loop.
    public var shutdownHandle: NodeShutdownHandle {
        NodeShutdownHandle(loop: loop) { [weak self] reason in self?.leave(then: .stop, reason: reason) }
    }

    /// Starts the first role and runs the loop on the calling thread until the node stops
    /// (SIGINT, SIGTERM, ``shutdownHandle``, or the role ending on its own); then finishes the
    /// last role. Throws what its start threw, or why the role ended (a refused pairing).
    public func run() throws {
        loop.assertInEventLoop()
        // The node, not a role, answers the signals: a role it leaves for another (a promotion)
        // leaves no handler behind, and SIGTERM stops whichever role plays then.
        try loop.onSignal([SIGINT, SIGTERM]) { [weak self] signo in
            self?.leave(then: .stop, reason: signo == SIGINT ? "SIGINT" : "SIGTERM")
        }
        try loop.onSignal([SIGHUP]) { [weak self] _ in
            self?.roles.current?.logger.info("signal.ignored", metadata: ["signal": "SIGHUP"])
        }
        try perform(roles.start(firstRole), reason: "start")
        loop.run()
        // The loop may also have been stopped from outside: the role then finishes as it is.
        let last = leftRole ?? roles.current
        leftRole = nil
        try last?.finish()
        if let startFailure { throw startFailure }
    }

    /// Leaves the role, then stops or plays `next` (the transition a promotion will use).
    func leave(then next: NodeRoles<Role>.Next, reason: String) {
        loop.assertInEventLoop()
        try? perform(roles.leave(then: next), reason: reason)
    }

    /// The role reports its shutdown complete.
    private func roleLeft() {
        loop.assertInEventLoop()
        try? perform(roles.roleLeft(), reason: "role left")
    }

    /// Carries out what the role state asked for.
    private func perform(_ action: NodeRoles<Role>.Action, reason: String) throws {
        switch action {
        case .start(let role):
            try begin(role)
        case .leave(let role):
            role.beginShutdown(reason: reason)
        case .stopLoop(let role):
            leftRole = role
            loop.stop()
        case .replace(let old, let new):
            try? old.finish()
            do {
                try begin(new)
            } catch {
                startFailure = error
                loop.stop()
            }
        case .none:
            break
        }
    }

    /// Starts `role`, which reports the end of its shutdown to this node.
    private func begin(_ role: Role) throws {
        role.onShutdownComplete { [weak self] in self?.roleLeft() }
        try role.start()
    }
}

extension Node.Role {
    /// The role's logger.
    var logger: Logger {
        switch self {
        case .master(let m): return m.logger
        case .slave(let s): return s.logger
        }
    }

    /// The loop the role runs on.
    var loop: EventLoop {
        switch self {
        case .master(let m): return m.loop
        case .slave(let s): return s.loop
        }
    }

    /// Routes the end of the role's shutdown to `report` instead of stopping the loop.
    func onShutdownComplete(_ report: @escaping () -> Void) {
        switch self {
        case .master(let m): m.onShutdownComplete = report
        case .slave(let s): s.onShutdownComplete = report
        }
    }

    /// Starts the role on its loop.
    func start() throws {
        switch self {
        case .master(let m): try m.start()
        case .slave(let s): try s.start()
        }
    }

    /// Begins leaving the role: its links close and its front-ends stop.
    func beginShutdown(reason: String) {
        switch self {
        case .master(let m): m.beginShutdown(reason: reason)
        case .slave(let s): s.beginShutdown(reason: reason)
        }
    }

    /// Finishes the role once it left; throws why a slave had to stop (a refused pairing).
    func finish() throws {
        switch self {
        case .master(let m):
            m.finishShutdown()
        case .slave(let s):
            s.finishShutdown()
            if let e = s.exitError { throw e }
        }
    }
}
