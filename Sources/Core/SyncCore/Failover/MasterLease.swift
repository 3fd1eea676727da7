/// A master's lease under automatic failover (`--auto-failover`; Docs/PROTOCOL.md, "Automatic
/// failover"): it acknowledges writes only while it heard, within the lease, from enough voters
/// to make a majority with itself. Any message of a voter counts (an ack, a heartbeat's answer,
/// a hello). Pure: the node reports what it hears with the loop's clock in milliseconds and
/// asks `tick(nowMillis:)` on a timer.
///
/// ```
///   lapsed --a majority heard within the lease--> held
///     ^                                              |
///     +---------- fewer than a majority -------------+
/// ```
///
/// A master starts lapsed: it acknowledges once a majority has connected, never on a promise
/// made before it restarted.
public struct MasterLease: Equatable, Sendable {
    /// A change of the lease, for the node to log.
    public enum Change: Equatable, Sendable {
        /// A majority is heard again: writes are acknowledged.
        case regained(heard: Int, majority: Int)
        /// Fewer than a majority heard within the lease: writes are refused `no_quorum`.
        case lapsed(heard: Int, majority: Int)
    }

    private enum State: Equatable, Sendable {
        case held
        case lapsed
    }

    /// How long a voter's last message counts.
    public let leaseMillis: Int64
    /// The other voters (node ids; the master itself is not among them, it always counts).
    public private(set) var voters: Set<String>
    private var lastHeard: [String: Int64] = [:]
    private var state = State.lapsed

    /// A lease over `voters` (the master's own id in it is ignored), lapsed until a majority
    /// is heard.
    public init(leaseMillis: Int64, voters: Set<String>, ownId: String) {
        self.leaseMillis = leaseMillis
        self.voters = voters.subtracting([ownId])
    }

    /// Votes that make a majority: floor((other voters + itself) / 2) + 1.
    public var majority: Int { (voters.count + 1) / 2 + 1 }

    /// True while writes are acknowledged.
    public var isHeld: Bool { state == .held }

    /// Voters (itself included) heard within the lease at `nowMillis`.
    public func heardCount(nowMillis: Int64) -> Int {
        1 + voters.filter { id in lastHeard[id].map { nowMillis - $0 < leaseMillis } ?? false }.count
    }

    /// A message of `id` arrived at `atMillis`, reported at `nowMillis` (a non-voter changes
    /// nothing). The lease is judged at `nowMillis`, never at the past instant the message
    /// arrived: judged then, a voter last heard 3 s ago would regain a lease that has lapsed
    /// since, only for the next tick to lapse it again.
    public mutating func heard(from id: String, atMillis: Int64, nowMillis: Int64) -> Change? {
        guard voters.contains(id) else { return nil }
        lastHeard[id] = max(lastHeard[id] ?? atMillis, atMillis)
        return evaluate(nowMillis: max(nowMillis, atMillis))
    }

    /// The store's voters changed (a pairing, a revocation, a voter flag).
    public mutating func votersChanged(_ updated: Set<String>, ownId: String, nowMillis: Int64) -> Change? {
        voters = updated.subtracting([ownId])
        lastHeard = lastHeard.filter { voters.contains($0.key) }
        return evaluate(nowMillis: nowMillis)
    }

    /// The timer fired: the lease lapses when the voters heard within it are no majority.
    public mutating func tick(nowMillis: Int64) -> Change? {
        evaluate(nowMillis: nowMillis)
    }

    private mutating func evaluate(nowMillis: Int64) -> Change? {
        let heard = heardCount(nowMillis: nowMillis)
        switch (state, heard >= majority) {
        case (.lapsed, true):
            state = .held
            return .regained(heard: heard, majority: majority)
        case (.held, false):
            state = .lapsed
            return .lapsed(heard: heard, majority: majority)
        case (.held, true), (.lapsed, false):
            return nil
        }
    }
}
