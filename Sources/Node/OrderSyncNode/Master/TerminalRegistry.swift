/// The master's terminal connections: every `TerminalSession` from its accept to its end, the
/// ids they get, and the per-address caps on them (Docs/SECURITY.md "Before authentication").
///
/// Owned by the master and changed only through its calls; its phase says whether it takes
/// new connections:
///
/// ```
///   accepting --close()--> closing     (every session asked to close; none added any more)
/// ```
///
/// A closing registry that became empty is drained: the master may stop. Loop-bound, as its
/// sessions are.
final class TerminalRegistry {
    /// Whether new connections are taken.
    enum Phase: Equatable {
        /// Sessions come and go.
        case accepting
        /// The master shuts down: the open sessions are closing and no new one is added.
        case closing
    }

    /// The connections that count against the limits of a host, and against the budget.
    struct ConnectionCounts: Equatable {
        /// Open connections, not evicted.
        var total = 0
        /// Of those, not authenticated yet.
        var preAuthenticated = 0
        /// Open connections of the host.
        var hostOpen = 0
        /// Of those, not authenticated yet.
        var hostPreAuthenticated = 0
    }

    /// The sessions by id, from accept until they end.
    private(set) var sessions: [Int: TerminalSession] = [:]
    /// The phase now.
    private(set) var phase = Phase.accepting
    private var nextId = 1
    /// At most this many connections of one address not authenticated yet.
    let maxHandshakesPerAddress: Int
    /// At most this many connections of one address in all.
    let maxConnectionsPerAddress: Int

    /// An empty registry with the per-address caps.
    init(maxHandshakesPerAddress: Int, maxConnectionsPerAddress: Int) {
        self.maxHandshakesPerAddress = maxHandshakesPerAddress
        self.maxConnectionsPerAddress = maxConnectionsPerAddress
    }

    /// The session with `id`, while it has not ended.
    subscript(id: Int) -> TerminalSession? { sessions[id] }

    /// How many sessions there are (`peers` in the log and the status).
    var count: Int { sessions.count }

    /// No session at all.
    var isEmpty: Bool { sessions.isEmpty }

    /// Closing and every session gone: nothing holds the master any more.
    var isDrained: Bool { phase == .closing && sessions.isEmpty }

    /// Adds the session `make` builds with the next id; nil (nothing built) once closing.
    func add(_ make: (Int) throws -> TerminalSession) rethrows -> TerminalSession? {
        guard phase == .accepting else { return nil }
        let session = try make(nextId)
        nextId += 1
        sessions[session.id] = session
        return session
    }

    /// The session ended: it is forgotten.
    func remove(_ session: TerminalSession) {
        sessions[session.id] = nil
    }

    /// The master shuts down: no session is added any more; returns the sessions to close.
    /// Only once: a second call returns none.
    func close() -> [TerminalSession] {
        guard phase == .accepting else { return [] }
        phase = .closing
        return Array(sessions.values)
    }

    /// Counts the open connections, and those of `host`, in one pass.
    func counts(host: String) -> ConnectionCounts {
        var counts = ConnectionCounts()
        for session in sessions.values where session.phase != .ended && !session.evicted {
            counts.total += 1
            let sameHost = session.host == host
            if sameHost { counts.hostOpen += 1 }
            if session.isPreAuthentication {
                counts.preAuthenticated += 1
                if sameHost { counts.hostPreAuthenticated += 1 }
            }
        }
        return counts
    }

    /// Why a new connection from `host` is refused by the per-address caps, or nil.
    func addressLimitReached(_ host: String, _ counts: ConnectionCounts) -> String? {
        if counts.hostPreAuthenticated >= maxHandshakesPerAddress {
            return
                "\(counts.hostPreAuthenticated) connections from \(host) not authenticated yet (limit \(maxHandshakesPerAddress))"
        }
        if counts.hostOpen >= maxConnectionsPerAddress {
            return "\(counts.hostOpen) connections from \(host) open (limit \(maxConnectionsPerAddress))"
        }
        return nil
    }

    /// The unauthenticated connection accepted first, whose slot goes to a newer one when the
    /// budget is full; nil when every connection is authenticated.
    func oldestUnauthenticated() -> TerminalSession? {
        var oldest: TerminalSession?
        for session in sessions.values where session.isPreAuthentication {
            if oldest.map({ session.connectedAt < $0.connectedAt }) ?? true { oldest = session }
        }
        return oldest
    }
}
