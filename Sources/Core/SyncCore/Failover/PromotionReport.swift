/// What a promotion did, as `ordersync promote` and `POST /v1/promote` answer it (design.md,
/// "Promotion"): promoted in term `term` at `seq`, or refused with `refusal` (`no_majority`, ...).
/// Names, not node ids, since an operator reads it. The `Candidacy` fills everything but
/// `tookMs`, which the node sets from its clock when it answers.
public struct PromotionReport: Equatable, Sendable {
    /// Why a promotion did not happen: the error's `code` and `message` of the 409 answer.
    public struct Refusal: Equatable, Sendable {
        /// Machine-readable code.
        public var code: Code
        /// One sentence naming the problem.
        public var message: String

        /// A refusal from its fields.
        public init(_ code: Code, _ message: String) {
            self.code = code
            self.message = message
        }

        /// The error codes of `POST /v1/promote`.
        public enum Code: String, Equatable, Sendable, CaseIterable {
            /// Fewer voters than a majority promised, and the operator did not force it.
            case noMajority = "no_majority"
            /// No voter that is ahead of the candidate could send its tail (their links
            /// failed), and the operator did not force it: promoting now would lose entries.
            case fetchFailed = "fetch_failed"
            /// Every voter ahead of the candidate answered that its journal no longer holds the
            /// entries right after the ones both share (compacted, or a snapshot since), and
            /// the operator did not force it: a tail with a gap would be taken.
            case tailUnavailable = "tail_unavailable"
            /// The node is not a slave (a master, or a node already promoting: see `promoting`).
            case notASlave = "not_a_slave"
            /// The slave never received `members`: it has no standby copy to be a master with.
            case noStandbyCopy = "no_standby_copy"
            /// A promotion is already running on this node.
            case promoting = "promoting"
            /// A voter answered that it promised or follows another node in a term at least as
            /// high as the one bid: another promotion (or master) is running. A forced candidate
            /// withdraws (one not forced needs a majority anyway); the message names the rival
            /// and its term.
            case rivalCandidate = "rival_candidate"
        }
    }

    /// The tail fetched from a voter that was ahead of the candidate.
    public struct Fetched: Equatable, Sendable {
        /// The voter's name.
        public var from: String
        /// How many journal entries it sent (all fetches together).
        public var entries: Int

        /// A fetch from its fields.
        public init(from: String, entries: Int) {
            self.from = from
            self.entries = entries
        }
    }

    /// A voter that answered the promise with a refusal, and its reason.
    public struct RefusedVote: Equatable, Sendable {
        /// The voter's name.
        public var name: String
        /// What it said (`voted for T-2 in term 3`, ...).
        public var reason: String

        /// A refused vote from its fields.
        public init(name: String, reason: String) {
            self.name = name
            self.reason = reason
        }
    }

    /// True when the node became master.
    public var promoted: Bool { refusal == nil }
    /// The term it became master in (or would have).
    public var term: Int64
    /// The last sequence number of its journal when it became master (after the fetch).
    public var seq: Int64
    /// Every voter's name, sorted.
    public var voters: [String]
    /// The voters that promised (granted their vote), the candidate itself included when it
    /// votes; sorted.
    public var promised: [String]
    /// The voters that neither promised nor refused (not connected, or lost), sorted.
    public var unreachable: [String]
    /// The voters that refused, with their reasons, sorted by name.
    public var refused: [RefusedVote]
    /// The tail fetched, if any.
    public var fetched: Fetched?
    /// True when it went on without a majority (`--force`).
    public var forced: Bool
    /// Milliseconds from the request to the answer; the node sets it.
    public var tookMs: Int64
    /// Why it was refused; nil when promoted.
    public var refusal: Refusal?

    /// A report from its fields.
    public init(
        term: Int64, seq: Int64, voters: [String], promised: [String], unreachable: [String], refused: [RefusedVote] = [],
        fetched: Fetched? = nil, forced: Bool = false, tookMs: Int64 = 0, refusal: Refusal? = nil
    ) {
        self.term = term
        self.seq = seq
        self.voters = voters
        self.promised = promised
        self.unreachable = unreachable
        self.refused = refused
        self.fetched = fetched
        self.forced = forced
        self.tookMs = tookMs
        self.refusal = refusal
    }

    /// A refusal decided before any vote was counted (`not_a_slave`, `no_standby_copy`,
    /// `promoting`): no term, no voters.
    public static func refused(_ code: Refusal.Code, _ message: String) -> PromotionReport {
        PromotionReport(term: 0, seq: 0, voters: [], promised: [], unreachable: [], refusal: Refusal(code, message))
    }
}
