/// Where a node's journal ends: the sequence number of its last entry and the term that entry
/// was applied in. Positions order by term first, then by sequence: an entry of a later term is
/// ahead of any entry of an earlier one, whatever their sequence numbers (design.md,
/// "Promotion" step 5: "a granted voter's (lastTerm, lastSeq)").
public struct LogPosition: Comparable, Hashable, Sendable, CustomStringConvertible {
    /// Sequence number of the last entry (0: none).
    public var lastSeq: Int64
    /// Term of the entry at `lastSeq` (1 when unknown or when there is none).
    public var lastTerm: Int64

    /// A position from its fields.
    public init(lastSeq: Int64, lastTerm: Int64) {
        self.lastSeq = lastSeq
        self.lastTerm = lastTerm
    }

    /// Term first, then sequence.
    public static func < (a: LogPosition, b: LogPosition) -> Bool {
        (a.lastTerm, a.lastSeq) < (b.lastTerm, b.lastSeq)
    }

    /// `seq 812 (term 2)`.
    public var description: String { "seq \(lastSeq) (term \(lastTerm))" }
}

/// The one candidate a node promised in a term: the metadata key `sync.vote`, written as
/// `"<term> <nodeId>"` before the promise is answered.
public struct TermVote: Equatable, Hashable, Sendable, CustomStringConvertible {
    /// The term the promise was for.
    public var term: Int64
    /// The candidate's node id.
    public var nodeId: String

    /// A vote from its fields.
    public init(term: Int64, nodeId: String) {
        self.term = term
        self.nodeId = nodeId
    }

    /// Reads `"<term> <nodeId>"`; nil for anything else (a missing or damaged value counts as
    /// no vote: the node then refuses nothing it would not refuse anyway, since its `sync.term`
    /// still bounds what it grants).
    public init?(stored text: String) {
        let parts = text.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, let t = Int64(parts[0]), t >= 1, !parts[1].isEmpty, !parts[1].contains(" ") else {
            return nil
        }
        self.term = t
        self.nodeId = String(parts[1])
    }

    /// The stored text, `"<term> <nodeId>"`.
    public var stored: String { "\(term) \(nodeId)" }

    public var description: String { stored }
}
