import Discovery
import EventLoopIO
import Foundation
import NodePolicy
import SyncCore

/// A slave becoming master (`ordersync promote`, Docs/PROTOCOL.md "Promotion"), as the master
/// role it now plays sees it: the term it stands for, the store and lineage it keeps serving,
/// the terminals' messages it holds until it is master proper, the request to answer, and the
/// slave configuration to go back to when it withdraws. One state, one event each.
///
/// ```
///   campaigning --decided(promote)--> persisting --persisted--> (master proper: candidacy nil)
///        |                                 |
///        +--decided(withdraw)--------------+--failed--> withdrawn (back to the slave role)
/// ```
///
/// Nothing is persisted while campaigning: a withdrawn candidate leaves its store as the
/// slave had it.
final class MasterCandidacy {
    /// Metadata key of the store's history: the epoch of the database that started it.
    static let lineageKey = "sync.lineage"
    /// Metadata key of the current term (absent: 1).
    static let termKey = "sync.term"
    /// Metadata key of the vote given in a term: `"<term> <nodeId>"`.
    static let voteKey = "sync.vote"

    /// Where the candidacy is.
    enum Phase: Equatable {
        /// Pre-votes and promises are being collected; writes are refused `promoting`.
        case campaigning
        /// A majority (or `--force`): the term, the vote and the master role are being committed.
        case persisting
        /// Given up: the node goes back to the slave role.
        case withdrawn
    }

    private enum State {
        case campaigning
        case persisting
        case withdrawn
    }

    /// The store served.
    let store: String
    /// The lineage served (the replica's epoch): slaves catch up across the promotion.
    let lineage: String
    /// The term stood for.
    let term: Int64
    /// Whether `--force` lets it go on without a majority.
    let forced: Bool
    /// The slave's configuration, to go back to.
    let slaveConfiguration: NodeConfiguration
    /// The slave's reconnect jitter, to go back to.
    let slaveJitter: ReconnectBackoff.Jitter
    /// Answers `ordersync promote` once it is over.
    let respond: LocalAPIServer.Respond
    /// When the promotion started, on the loop's clock.
    let startedAt: MonotonicInstant
    /// The terminals' messages held until the node is master proper, in arrival order.
    private(set) var held: [(session: Int, bytes: [UInt8])] = []
    /// The deadline timer (`Candidacy.Action.armDeadline`).
    var deadline: TimerHandle?
    /// The election's rules: pre-votes, promises, votes, the fetch.
    var election: Candidacy
    /// The voter a tail is fetched from and the entries it sent so far.
    var fetching: (voter: String, entries: [JournalEntry])?
    private var state = State.campaigning

    /// A candidacy for `term` of `store` (lineage `lineage`), asked by `request`, answered through
    /// `respond`.
    init(
        store: String, lineage: String, term: Int64, request: PromoteRequest, election: Candidacy.Configuration,
        slaveConfiguration: NodeConfiguration, slaveJitter: ReconnectBackoff.Jitter, respond: LocalAPIServer.Respond,
        startedAt: MonotonicInstant
    ) {
        self.election = Candidacy(election)
        self.slaveJitter = slaveJitter
        self.store = store
        self.lineage = lineage
        self.term = term
        forced = request.force
        self.slaveConfiguration = slaveConfiguration
        self.respond = respond
        self.startedAt = startedAt
    }

    /// The phase now.
    var phase: Phase {
        switch state {
        case .campaigning: return .campaigning
        case .persisting: return .persisting
        case .withdrawn: return .withdrawn
        }
    }

    /// A terminal's message arrived before the node is master proper: held, in order.
    func hold(_ bytes: [UInt8], session: Int) {
        if case .withdrawn = state { return }
        held.append((session, bytes))
    }

    /// The candidate won (a majority, or forced): its term is committed next. Only while
    /// campaigning.
    func won() {
        guard case .campaigning = state else { preconditionFailure("a candidacy won while \(phase)") }
        state = .persisting
    }

    /// The candidate gives up (no majority, or its term could not be committed).
    func withdrew() {
        switch state {
        case .campaigning, .persisting: state = .withdrawn
        case .withdrawn: preconditionFailure("a candidacy withdrew twice")
        }
    }

    /// The held messages, handed over once: the node is master proper.
    func takeHeld() -> [(session: Int, bytes: [UInt8])] {
        defer { held = [] }
        return held
    }

    /// Milliseconds since the promotion started.
    func tookMs(now: MonotonicInstant) -> Int64 { (now - startedAt).wholeMilliseconds }
}
