/// A slave's bid to become master in term T' (design.md, "Promotion", steps 3 to 5): pre-votes,
/// promises, the fetch of a tail it lacks, and the outcome. Pure: events in, actions out, in
/// the order the node must carry them out; no clock (the node arms a timer when told with
/// `armDeadline` and reports it with `deadlinePassed()`), no store, no links.
///
/// 1. `start()`: the node publishes itself as a candidate; voters that see it connect and say
///    hello, each a pre-vote (`preVote`). Nothing is persisted anywhere yet.
/// 2. Once pre-votes and itself make a majority of the voters, it persists its own vote
///    (`persistOwnVote`, before any promise leaves) and asks each pre-voter for its promise
///    (`sendPromise`). A voter that pre-votes later is asked too.
/// 3. When every voter asked has answered (or its link is lost, or the deadline passed, with a
///    short grace once for answers on their way) and a majority granted: if a granted voter is
///    ahead of it, it fetches the tail from the most advanced one (ties to the lowest id), then
///    becomes master (`becomeMaster`).
/// 4. Without a majority at the deadline it withdraws (`withdraw`, `no_majority`), unless the
///    operator forced it (`forced`, then on with whoever promised, even nobody). Even forced,
///    it withdraws (`rival_candidate`) when a voter answers that it promised or follows another
///    node in a term at least as high.
///
/// Its term is a ballot it owns (`TermBallot`): no other candidate ever bids the same one.
public struct Candidacy: Sendable {
    /// What the candidate starts from.
    public struct Configuration: Equatable, Sendable {
        /// The term it bids for: T' = `TermBallot.bid(number:above:)`, the smallest term above
        /// its `sync.term` and the highest term seen in TXT that its member number owns.
        public var term: Int64
        /// Its node id.
        public var nodeId: String
        /// Its own name, as the report lists it among the voters.
        public var name: String
        /// Where its journal ends.
        public var position: LogPosition
        /// True when it is a voter itself (it then counts its own vote).
        public var isVoter: Bool
        /// Every voter of the store (the old master and the paired terminals with the voter
        /// flag), id to name. Its own id in it is ignored: `isVoter` says whether it counts.
        public var voters: [String: String]
        /// `--force`: go on without a majority at the deadline.
        public var force: Bool

        /// A configuration from its fields.
        public init(
            term: Int64, nodeId: String, name: String, position: LogPosition, isVoter: Bool, voters: [String: String], force: Bool
        ) {
            self.term = term
            self.nodeId = nodeId
            self.name = name
            self.position = position
            self.isVoter = isVoter
            self.voters = voters
            self.force = force
        }
    }

    /// What the node does, in the order given.
    public enum Action: Equatable, Sendable {
        /// Persist `sync.term` = T' and `sync.vote` = "T' <own id>", and wait for the commit
        /// before carrying out the actions that follow.
        case persistOwnVote(TermVote)
        /// Send `{"type":"promise","term":T'}` on the pre-voter's link.
        case sendPromise(to: String)
        /// Send `{"type":"fetch","after":S,"termStarts":{..}}` (its own term starts) to this
        /// granted voter and apply what it sends (an entry at or below S replaces the
        /// candidate's own from there on), then report `fetched(upTo:)` (or `fetchFailed()`).
        case fetch(from: String, after: Int64)
        /// Call `deadlinePassed()` after this many milliseconds (replacing a timer armed before).
        case armDeadline(afterMillis: Int64)
        /// The operator's `--force` is used: no majority. Log `promote.forced` at error level,
        /// naming these unreachable voters.
        case forced(unreachable: [String])
        /// Record the term start T' = seq + 1, become master proper, answer the report.
        case becomeMaster(PromotionReport)
        /// Give up: stop publishing, close the voters' links, go back to the slave role, answer
        /// the report (HTTP 409).
        case withdraw(PromotionReport)
    }

    /// How long the candidate waits for a majority of pre-votes and promises.
    public static let deadlineMillis: Int64 = 10_000
    /// Once, at the deadline, how much longer it waits for promises asked and not answered.
    public static let voteGraceMillis: Int64 = 2_000
    /// How long one fetch may take before the next voter ahead is tried.
    public static let fetchMillis: Int64 = 3_000

    /// The votes once promises went out.
    struct Ballot: Equatable, Sendable {
        /// Voters asked for a promise that have not answered yet.
        var pending: Set<String> = []
        /// Voters that granted, with where their journals end.
        var granted: [String: LogPosition] = [:]
        /// Voters that refused, with their reasons.
        var refused: [String: String] = [:]
        /// True once the operator's force is used.
        var forced = false
        /// True once the deadline was extended for answers on their way.
        var extended = false
        /// Where the candidate's journal ends, fetched entries included.
        var position: LogPosition
        /// Voters a fetch was tried from.
        var tried: Set<String> = []
        /// Voters whose fetch failed (its link closed, an entry was refused, it took too long).
        var failed: Set<String> = []
        /// Voters that answered they cannot send a gapless tail (`tailUnavailable()`).
        var unavailable: Set<String> = []
        /// Entries fetched so far.
        var fetchedEntries = 0
        /// The last voter entries came from.
        var fetchedFrom: String?
    }

    private enum State: Equatable, Sendable {
        /// Created; `start()` not called yet.
        case created
        /// Waiting for pre-votes (hellos of voters), with where their journals end.
        case gathering(preVotes: [String: LogPosition])
        /// Own vote persisted, promises sent, answers awaited.
        case voting(Ballot)
        /// A majority (or force) is in; fetching the tail from `source`.
        case fetching(Ballot, source: String)
        /// Promoted or withdrawn (`voted`: after persisting its own vote): every later event is
        /// ignored.
        case finished(PromotionReport, voted: Bool)
    }

    /// What it started from.
    public let configuration: Configuration
    private var state: State = .created

    /// A candidacy for `configuration.term`.
    public init(_ configuration: Configuration) {
        precondition(configuration.term >= 2, "a promotion raises the term above 1")
        self.configuration = configuration
    }

    /// Votes that make a majority: floor(voters / 2) + 1, the candidate counted when it votes.
    public var majority: Int { voterIds.count / 2 + 1 }

    /// The outcome, once promoted or withdrawn.
    public var outcome: PromotionReport? {
        if case .finished(let r, _) = state { return r }
        return nil
    }

    /// True once the node's own vote is persisted (promises went out).
    public var hasVoted: Bool {
        switch state {
        case .voting, .fetching: return true
        case .finished(_, let voted): return voted
        case .created, .gathering: return false
        }
    }

    /// The node published the candidate: arm the deadline (and promote at once when the
    /// candidate alone is a majority).
    public mutating func start() -> [Action] {
        guard case .created = state else { preconditionFailure("Candidacy.start() called twice") }
        state = .gathering(preVotes: [:])
        var actions: [Action] = [.armDeadline(afterMillis: Self.deadlineMillis)]
        if selfVotes >= majority { actions += startVoting(preVotes: [:], forced: false) }
        return actions
    }

    /// A voter connected and said hello (a pre-vote), its journal ending at (lastSeq, lastTerm).
    /// A non-voter, the candidate itself and a voter already counted change nothing.
    public mutating func preVote(from id: String, lastSeq: Int64, lastTerm: Int64) -> [Action] {
        guard isOtherVoter(id) else { return [] }
        switch state {
        case .gathering(var preVotes):
            preVotes[id] = LogPosition(lastSeq: lastSeq, lastTerm: lastTerm)
            state = .gathering(preVotes: preVotes)
            return preVotes.count + selfVotes >= majority ? startVoting(preVotes: preVotes, forced: false) : []
        case .voting(var ballot):
            guard ballot.granted[id] == nil, ballot.refused[id] == nil, !ballot.pending.contains(id) else { return [] }
            ballot.pending.insert(id)
            state = .voting(ballot)
            return [.sendPromise(to: id)]
        case .created, .fetching, .finished:
            return []
        }
    }

    /// The link to `id` closed. A pre-vote is forgotten; a promise asked and not answered counts
    /// as unreachable; a granted vote stays granted (it is on the voter's disk); the voter being
    /// fetched from counts as a failed fetch.
    public mutating func linkLost(from id: String) -> [Action] {
        switch state {
        case .gathering(var preVotes):
            preVotes[id] = nil
            state = .gathering(preVotes: preVotes)
            return []
        case .voting(var ballot):
            guard ballot.pending.remove(id) != nil else { return [] }
            return settle(ballot)
        case .fetching(_, let source) where source == id:
            return fetchFailed()
        case .created, .fetching, .finished:
            return []
        }
    }

    /// `id` granted its vote for this term; its journal ends at (lastSeq, lastTerm). Ignored
    /// unless a promise was asked of it and not answered yet.
    public mutating func voteGranted(from id: String, lastSeq: Int64, lastTerm: Int64) -> [Action] {
        guard case .voting(var ballot) = state, ballot.pending.remove(id) != nil else { return [] }
        ballot.granted[id] = LogPosition(lastSeq: lastSeq, lastTerm: lastTerm)
        return settle(ballot)
    }

    /// `id` refused its vote, saying why, and naming the `rival` it promised or follows in a
    /// term at or above this one, if any. Ignored unless a promise was asked of it and not
    /// answered yet. A forced candidate told of a rival withdraws at once (`rival_candidate`):
    /// `--force` skips the majority, never another node's claim to a term as high.
    public mutating func voteRefused(from id: String, reason: String, rival: TermVote? = nil) -> [Action] {
        guard case .voting(var ballot) = state, ballot.pending.remove(id) != nil else { return [] }
        ballot.refused[id] = reason
        if configuration.force, let rival, rival.term >= configuration.term, rival.nodeId != configuration.nodeId {
            let report = report(ballot, refusal: rivalRefusal(rival, votersName: names([id])[0]))
            state = .finished(report, voted: true)
            return [.withdraw(report)]
        }
        return settle(ballot)
    }

    /// The timer armed by the last `armDeadline` fired.
    public mutating func deadlinePassed() -> [Action] {
        switch state {
        case .gathering(let preVotes):
            guard configuration.force else { return withdraw(preVotes: preVotes) }
            let forced = Action.forced(unreachable: names(voterIds.subtracting(preVotes.keys).subtracting([configuration.nodeId])))
            return [forced] + startVoting(preVotes: preVotes, forced: true)
        case .voting(var ballot):
            if !ballot.pending.isEmpty && !ballot.extended {
                ballot.extended = true
                state = .voting(ballot)
                return [.armDeadline(afterMillis: Self.voteGraceMillis)]
            }
            ballot.pending = []
            return decide(ballot)
        case .fetching:
            return fetchFailed()
        case .created, .finished:
            return []
        }
    }

    /// The fetched entries are applied and committed: the candidate's journal ends at `seq`
    /// now, and `entries` arrived (nil: counted as `seq` minus where it ended before, for a
    /// fetch that replaced none of its own entries).
    public mutating func fetched(upTo seq: Int64, entries: Int? = nil) -> [Action] {
        guard case .fetching(var ballot, let source) = state else { return [] }
        let sourcePosition = ballot.granted[source] ?? ballot.position
        // Short of what the voter said it held: the term of `seq` is not known, keep the one of
        // the candidate's own last entry (the next voter ahead is tried from `seq`).
        let now = seq >= sourcePosition.lastSeq ? sourcePosition : LogPosition(lastSeq: seq, lastTerm: ballot.position.lastTerm)
        let count = entries ?? Int(max(0, seq - ballot.position.lastSeq))
        if count > 0 || now != ballot.position {
            ballot.fetchedEntries += count
            ballot.fetchedFrom = source
            ballot.position = now
        }
        ballot.tried.insert(source)
        return proceed(ballot)
    }

    /// The fetch failed (its link closed, an entry could not be applied, or it took too long):
    /// the next granted voter ahead is tried.
    public mutating func fetchFailed() -> [Action] {
        guard case .fetching(var ballot, let source) = state else { return [] }
        ballot.tried.insert(source)
        ballot.failed.insert(source)
        return proceed(ballot)
    }

    /// The voter answered that its journal cannot give a tail without a gap (it begins after
    /// the seq both share): the next granted voter ahead is tried.
    public mutating func tailUnavailable() -> [Action] {
        guard case .fetching(var ballot, let source) = state else { return [] }
        ballot.unavailable.insert(source)
        state = .fetching(ballot, source: source)
        return fetchFailed()
    }

    // MARK: - Steps

    /// Persists its own vote and asks every pre-voter for its promise.
    private mutating func startVoting(preVotes: [String: LogPosition], forced: Bool) -> [Action] {
        var ballot = Ballot(position: configuration.position)
        ballot.forced = forced
        ballot.pending = Set(preVotes.keys)
        state = .voting(ballot)
        let vote = Action.persistOwnVote(TermVote(term: configuration.term, nodeId: configuration.nodeId))
        let promises = preVotes.keys.sorted().map { Action.sendPromise(to: $0) }
        return [vote] + promises + (ballot.pending.isEmpty ? decide(ballot) : [])
    }

    /// Decides once no promise is pending; keeps waiting otherwise.
    private mutating func settle(_ ballot: Ballot) -> [Action] {
        state = .voting(ballot)
        return ballot.pending.isEmpty ? decide(ballot) : []
    }

    /// Every answer is in (or the deadline passed): on with a majority or with force, else
    /// withdraw.
    private mutating func decide(_ ballot: Ballot) -> [Action] {
        var ballot = ballot
        if ballot.granted.count + selfVotes >= majority || ballot.forced { return proceed(ballot) }
        guard configuration.force else {
            let report = report(ballot, refusal: .init(.noMajority, noMajorityMessage(promised: ballot.granted.count + selfVotes)))
            state = .finished(report, voted: true)
            return [.withdraw(report)]
        }
        ballot.forced = true
        return [.forced(unreachable: unreachable(ballot))] + proceed(ballot)
    }

    /// Fetches from the most advanced granted voter ahead of the candidate not tried yet, or
    /// becomes master when none is left. A voter that answered `fetched` short of what its vote
    /// said is not asked again (it sent what it has); one whose fetch failed while it is still
    /// ahead makes the candidate withdraw (`fetch_failed`) unless forced: its entries would be
    /// lost.
    private mutating func proceed(_ ballot: Ballot) -> [Action] {
        let ahead = ballot.granted.filter { $0.value > ballot.position }
        let untried = ahead.filter { !ballot.tried.contains($0.key) }
        // The most advanced; of equals, the lowest id.
        if let best = untried.min(by: { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }) {
            state = .fetching(ballot, source: best.key)
            return [.fetch(from: best.key, after: ballot.position.lastSeq), .armDeadline(afterMillis: Self.fetchMillis)]
        }
        let unfetched = ahead.keys.filter { ballot.failed.contains($0) }
        if !unfetched.isEmpty && !ballot.forced {
            let names = names(Set(unfetched)).joined(separator: ", ")
            let refusal: PromotionReport.Refusal =
                unfetched.allSatisfy(ballot.unavailable.contains)
                ? .init(
                    .tailUnavailable,
                    "\(names) no longer hold the entries right after the ones this terminal shares; nothing was promoted")
                : .init(.fetchFailed, "could not fetch the entries this terminal lacks from \(names); nothing was promoted")
            let report = report(ballot, refusal: refusal)
            state = .finished(report, voted: true)
            return [.withdraw(report)]
        }
        let report = report(ballot, refusal: nil)
        state = .finished(report, voted: true)
        return [.becomeMaster(report)]
    }

    /// Withdraws before any vote was persisted: the pre-voters were reachable, nobody promised.
    private mutating func withdraw(preVotes: [String: LogPosition]) -> [Action] {
        let others = voterIds.subtracting([configuration.nodeId])
        let report = PromotionReport(
            term: configuration.term, seq: configuration.position.lastSeq, voters: names(voterIds), promised: [],
            unreachable: names(others.subtracting(preVotes.keys)),
            refusal: .init(.noMajority, noMajorityMessage(promised: preVotes.count + selfVotes, reachable: true)))
        state = .finished(report, voted: false)
        return [.withdraw(report)]
    }
}
