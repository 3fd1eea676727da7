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
    /// The role a hand-over builds once the role left (``handOver(reason:to:)``); nil when the
    /// node stops after it.
    private var successor: (() throws -> Role)?

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
        do {
            try perform(roles.start(firstRole), reason: "start")
        } catch {
            // The first role did not start: the data directory is left as the start found it.
            firstRole.seat.writer.close()
            firstRole.seat.dataDirectory.abandon()
            throw error
        }
        firstRole.seat.dataDirectory.markStarted()
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
        // A stop wins over a hand-over under way: the role closes its seat as it leaves.
        if case .stop = next, successor != nil, let seat = roles.current?.seat {
            successor = nil
            seat.handingOver = false
            seat.frontEnds.stop()
        }
        try? perform(roles.leave(then: next), reason: reason)
    }

    /// Leaves the role for the one `make` builds on the same loop, the same store writer and the
    /// same running front-ends (a slave promoted, a master stepping down): `make` runs once the
    /// role left and finished, the writer idle. A stop asked meanwhile wins; a hand-over asked
    /// while the role is already leaving is ignored.
    func handOver(reason: String, to make: @escaping () throws -> Role) {
        loop.assertInEventLoop()
        guard successor == nil, let current = roles.current, !current.isLeaving else { return }
        // The role leaves as for a stop; once it left, `perform(.stopLoop)` plays the
        // successor instead of stopping the loop.
        successor = make
        current.handsOver()
        try? perform(roles.leave(then: .stop), reason: reason)
    }

    /// The role reports its shutdown complete. A report from a role the node no longer plays
    /// (a late timer of the role a hand-over left) is ignored: it must not stop the next role.
    private func roleLeft(_ role: ObjectIdentifier) {
        loop.assertInEventLoop()
        guard let current = roles.current, current.identity == role else {
            roles.current?.logger.debug("node.stale_role_report")
            return
        }
        try? perform(roles.roleLeft(), reason: "role left")
    }

    /// Carries out what the role state asked for.
    private func perform(_ action: NodeRoles<Role>.Action, reason: String) throws {
        switch action {
        case .start(let role):
            try begin(role)
        case .leave(let role):
            role.beginShutdown(reason: reason)
        case .stopLoop(let role) where successor != nil:
            let make = successor!
            successor = nil
            role.finishForHandOver()
            do {
                let next = try make()
                next.seat.handingOver = false
                // The successor is the node's first role again, on the same loop.
                roles = NodeRoles<Role>()
                try perform(roles.start(next), reason: "hand-over")
            } catch {
                // The next role could not start: the node stops, its seat closed.
                role.logger.error("node.hand_over_failed", metadata: ["error": "\(error)"])
                let seat = role.seat
                seat.handingOver = false
                seat.frontEnds.stop()
                seat.close()
                startFailure = error
                loop.stop()
            }
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
        let identity = role.identity
        role.onShutdownComplete { [weak self] in self?.roleLeft(identity) }
        role.onHandOver { [weak self] reason, make in self?.handOver(reason: reason, to: make) }
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

    /// The role's object (a role played twice is two objects): tells a report of the role
    /// played now from a late one of a role left before.
    var identity: ObjectIdentifier {
        switch self {
        case .master(let m): return ObjectIdentifier(m)
        case .slave(let s): return ObjectIdentifier(s)
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

    /// Lets the role ask the node to hand over to another role (`Node.handOver`).
    func onHandOver(_ handOver: @escaping (_ reason: String, _ make: @escaping () throws -> Node.Role) -> Void) {
        switch self {
        case .master(let m): m.seat.requestHandOver = handOver
        case .slave(let s): s.seat.requestHandOver = handOver
        }
    }

    /// The role's seat (its store writer, its front-ends).
    var seat: RoleSeat {
        switch self {
        case .master(let m): return m.seat
        case .slave(let s): return s.seat
        }
    }

    /// Whether the role is already leaving (shutting down).
    var isLeaving: Bool {
        switch self {
        case .master(let m): return m.shuttingDown
        case .slave(let s): return s.shuttingDown
        }
    }

    /// The role leaves for another: it keeps its seat (writer, data directory, front-ends).
    func handsOver() { seat.handingOver = true }

    /// Finishes the role left for another: what it still writes is committed; the seat stays.
    func finishForHandOver() {
        switch self {
        case .master(let m): m.finishShutdown()
        case .slave(let s): s.finishShutdown()
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
