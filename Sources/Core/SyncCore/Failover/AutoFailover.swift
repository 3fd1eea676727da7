/// Automatic failover's timings (`--auto-failover`; Docs/PROTOCOL.md, "Automatic failover").
///
/// The master keeps its lease only while it hears from a majority of the voters (itself
/// counted) within `leaseMillis`; a voter starts a candidacy only after its master was silent
/// for longer than `electionTimeoutMillis` (the lease plus a margin), and grants an automatic
/// candidate its pre-vote only when it has not heard its master within the lease itself. An old
/// master therefore stops acknowledging before any voter may promise another node.
public struct AutoFailoverTiming: Equatable, Sendable {
    /// How long a master keeps acknowledging writes without hearing a majority of the voters.
    public var leaseMillis: Int64
    /// The silence a voter waits for beyond the lease before it stands or pre-votes (the
    /// election timeout is `leaseMillis + marginMillis`; a voter stands after it plus its
    /// stagger and jitter). It must exceed the heartbeat interval plus the network's delay.
    public var marginMillis: Int64
    /// The wait added per step of a voter's rank (how current it is, then its place among the voters).
    public var staggerStepMillis: Int64
    /// The highest rank counted (a voter further behind waits no longer than this rank).
    public var maxRank: Int
    /// The seeded jitter's range: [0, jitterMillis).
    public var jitterMillis: Int64

    /// The defaults: a 2.5 s lease, 3 s before a voter stands, 1.5 s per rank (at most 4: a
    /// candidate's announcement, about 1 s of mDNS probing, reaches the next voter before it
    /// would stand), 100 ms of jitter: the first voter stands 3.0 to 3.1 s after its master went
    /// silent.
    public static let standard = AutoFailoverTiming(
        leaseMillis: 2_500, marginMillis: 500, staggerStepMillis: 1_500, maxRank: 4, jitterMillis: 100)

    /// Timings from their fields.
    public init(leaseMillis: Int64, marginMillis: Int64, staggerStepMillis: Int64, maxRank: Int, jitterMillis: Int64) {
        precondition(leaseMillis > 0 && marginMillis > 0, "the election timeout must exceed the lease")
        self.leaseMillis = leaseMillis
        self.marginMillis = marginMillis
        self.staggerStepMillis = staggerStepMillis
        self.maxRank = maxRank
        self.jitterMillis = jitterMillis
    }

    /// The election timeout before stagger and jitter: the lease plus the margin.
    public var electionTimeoutMillis: Int64 { leaseMillis + marginMillis }

    /// How often an idle link is pinged with automatic failover: a twelfth of the lease
    /// (208 ms by default), well within the margin.
    public var heartbeatMillis: Int64 { leaseMillis / 12 }
}

/// A voter slave's side of automatic failover: when its master has been silent for longer than
/// its election timeout, it starts the candidacy `ordersync promote` runs (never forced); and
/// whether it grants an automatic candidate its pre-vote. Pure: the node reports what it hears
/// with the loop's clock in milliseconds and asks `tick(nowMillis:)` on a timer.
///
/// ```
///   watching --silence > timeout--> standing --candidacyEnded--> watching (heard = now)
///       ^                                                           |
///       +------------------------ heard(atMillis:) -----------------+
/// ```
public struct AutoFailover: Equatable, Sendable {
    /// The fewest voters automatic failover runs with: with 2, a lost link and a dead master
    /// look the same to each side (the two-node problem).
    public static let minimumVoters = 3

    /// What the node does on a tick.
    public enum Action: Equatable, Sendable {
        /// Start a candidacy for the next term, marked automatic (TXT `auto=1`), never forced.
        case standForElection(silentMillis: Int64)
    }

    private enum State: Equatable, Sendable {
        /// Following a master last heard at this instant.
        case watching(lastHeardMillis: Int64)
        /// A candidacy is running (or the node is master now).
        case standing
    }

    /// The timings.
    public let timing: AutoFailoverTiming
    /// The wait beyond the election timeout: this voter's stagger plus its jitter.
    public private(set) var delayMillis: Int64
    private var state: State

    /// A voter that last heard its master at `nowMillis` (when it starts, it counts as heard:
    /// a restart is no silence). `rank` orders the voters (0: the most current, the first to
    /// stand); `seed` draws the jitter (a node's own, so voters of equal rank differ).
    public init(timing: AutoFailoverTiming = .standard, rank: Int, seed: UInt64, nowMillis: Int64) {
        self.timing = timing
        delayMillis = Self.delay(timing: timing, rank: rank, seed: seed)
        state = .watching(lastHeardMillis: nowMillis)
    }

    /// The wait a voter of `rank` adds to the election timeout: `min(rank, maxRank)` stagger
    /// steps plus a jitter in [0, jitterMillis) drawn from `seed` (SplitMix64).
    public static func delay(timing: AutoFailoverTiming, rank: Int, seed: UInt64) -> Int64 {
        let stagger = Int64(min(max(rank, 0), timing.maxRank)) * timing.staggerStepMillis
        guard timing.jitterMillis > 0 else { return stagger }
        var z = seed &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return stagger + Int64(z % UInt64(timing.jitterMillis))
    }

    /// How current a voter is, from what every voter of the store was told alike (the master's
    /// last seq and its stable seq, Docs/PROTOCOL.md 7.18) and its own last seq.
    public enum Currency: Int, Comparable, Sendable {
        /// It holds the master's last seq.
        case current = 0
        /// It lacks some of the master's last entries but holds the stable seq: another voter
        /// may hold more, or none.
        case behindMaster = 1
        /// It lacks entries a majority holds: a more current voter surely survives.
        case behindMajority = 2

        /// The class of a voter at `lastSeq` whose master announced `masterSeq` and `stableSeq`.
        public init(lastSeq: Int64, masterSeq: Int64, stableSeq: Int64) {
            if lastSeq >= masterSeq {
                self = .current
            } else if lastSeq >= stableSeq {
                self = .behindMaster
            } else {
                self = .behindMajority
            }
        }

        public static func < (a: Currency, b: Currency) -> Bool { a.rawValue < b.rawValue }
    }

    /// The rank of a voter: how current it is dominates, its place among the voting slaves
    /// sorted by node id (0 first) breaks the tie among voters equally current. Ranks are
    /// distinct for distinct (currency, place): a voter behind stands only after every more
    /// current voter had its turn (a voter promises only a candidate at least as current as
    /// itself, Docs/PROTOCOL.md 7.9, so a lagging candidate standing first would split the
    /// vote). The class is judged against what all voters were told, not against the others'
    /// own journals (no voter knows them): `behindMajority` never holds for every voter, as a
    /// majority holds the stable seq; when every voter is `behindMaster` (the master's last
    /// entries reached none), all wait `votingSlaves` steps more, at most `maxRank` in all.
    public static func rank(currency: Currency, placeAmongVoters: Int, votingSlaves: Int) -> Int {
        let slaves = max(votingSlaves, 1)
        let place = min(max(placeAmongVoters, 0), slaves - 1)
        return currency.rawValue * slaves + place
    }

    /// The voter's rank changed (it fell behind or caught up): its stagger follows.
    public mutating func rerank(_ rank: Int, seed: UInt64) {
        delayMillis = Self.delay(timing: timing, rank: rank, seed: seed)
    }

    /// How long this voter waits after its master went silent: timeout, stagger and jitter.
    public var standAfterMillis: Int64 { timing.electionTimeoutMillis + delayMillis }

    /// True while a candidacy it started runs.
    public var isStanding: Bool { state == .standing }

    /// The instant its master was last heard; nil while standing.
    public var lastHeardMillis: Int64? {
        if case .watching(let t) = state { return t }
        return nil
    }

    /// Its master (or the candidate it follows) was heard at `atMillis`: a message, a live link.
    public mutating func heard(atMillis: Int64) {
        guard case .watching(let last) = state else { return }
        state = .watching(lastHeardMillis: max(last, atMillis))
    }

    /// The timer fired: stands when the silence is longer than `standAfterMillis`.
    public mutating func tick(nowMillis: Int64) -> Action? {
        guard case .watching(let last) = state else { return nil }
        let silent = nowMillis - last
        guard silent > standAfterMillis else { return nil }
        state = .standing
        return .standForElection(silentMillis: silent)
    }

    /// The candidacy it started ended without making it master (withdrawn): it watches again,
    /// its silence counted from `nowMillis`, so it stands again only after a full timeout.
    public mutating func candidacyEnded(nowMillis: Int64) {
        state = .watching(lastHeardMillis: nowMillis)
    }

    /// Whether to pre-vote for an automatic candidate (TXT `auto=1`) at `nowMillis`: only when
    /// its master has not been heard for the election timeout (the lease plus the margin), so a
    /// voter that still sees a healthy master keeps it. The margin covers the heartbeat interval
    /// and the delays: the master last heard this voter at most a heartbeat after the voter last
    /// heard it, so its lease has lapsed by then (Docs/PROTOCOL.md, "Automatic failover"). A
    /// manual promotion is the operator's call and is not checked here.
    public func grantsAutomaticPreVote(nowMillis: Int64) -> Bool {
        guard case .watching(let last) = state else { return true }
        return nowMillis - last >= timing.electionTimeoutMillis
    }
}
