/// The role a ``Node`` plays on its loop, as one state with one event per change: the node
/// starts a role, leaves it (to stop, or to play another: a slave promoted to master), and is
/// told when the role has left (its links closed, its front-ends stopped). Pure: the node
/// carries out the returned ``Action``.
///
/// ```
///   idle --start(r)--> playing(r) --leave(then: n)--> leaving(r, n) --roleLeft()--+--> playing(n')
///                          |                                                      |    (n = .play(n'))
///                          +----------------------roleLeft()----------------------+--> stopped
///                           (the role ended on its own: SIGTERM, a refused pairing)    (n = .stop)
/// ```
///
/// The loop outlives a role: only `stopped` stops it. A stop asked while leaving for another
/// role wins; a role reporting twice that it left, or a leave when nothing plays, does nothing.
struct NodeRoles<Role> {
    /// What comes after the role being left.
    enum Next {
        /// Nothing: the node stops (its loop returns).
        case stop
        /// Another role, started on the same loop.
        case play(Role)
    }

    /// What the node does after an event.
    enum Action {
        /// Start `role` (its listeners, its links, its front-ends).
        case start(Role)
        /// Ask `role` to leave: close its links and front-ends, then report `roleLeft()`.
        case leave(Role)
        /// `role` left and nothing follows: finish it and stop the loop.
        case stopLoop(finishing: Role)
        /// `old` left: finish it, then start `new` on the same loop.
        case replace(old: Role, new: Role)
        /// Nothing to do.
        case none
    }

    private enum State {
        case idle
        case playing(Role)
        case leaving(Role, then: Next)
        case stopped
    }

    private var state = State.idle

    /// The role played (or being left) now; nil before the start and once stopped.
    var current: Role? {
        switch state {
        case .idle, .stopped: return nil
        case .playing(let role), .leaving(let role, _): return role
        }
    }

    /// Whether the node stopped for good.
    var isStopped: Bool {
        if case .stopped = state { return true }
        return false
    }

    /// The node starts with `role`; only once, before anything else.
    mutating func start(_ role: Role) -> Action {
        guard case .idle = state else { preconditionFailure("a node's first role is started once") }
        state = .playing(role)
        return .start(role)
    }

    /// The node leaves its role, then does `next`.
    mutating func leave(then next: Next) -> Action {
        switch state {
        case .playing(let role):
            state = .leaving(role, then: next)
            return .leave(role)
        case .leaving(let role, .play):
            if case .stop = next { state = .leaving(role, then: .stop) }
            return .none
        case .idle, .leaving(_, .stop), .stopped:
            return .none
        }
    }

    /// The role reports that it left (asked to, or on its own).
    mutating func roleLeft() -> Action {
        switch state {
        case .playing(let role), .leaving(let role, .stop):
            state = .stopped
            return .stopLoop(finishing: role)
        case .leaving(let role, .play(let next)):
            state = .playing(next)
            return .replace(old: role, new: next)
        case .idle, .stopped:
            return .none
        }
    }
}
