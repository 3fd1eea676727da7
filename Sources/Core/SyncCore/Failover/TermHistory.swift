import JSON

/// A journal's history by terms: where each term began (`sync.term_starts`, `termStarts` on the
/// wire) and where the journal ends. Two nodes compare histories to find the last entry they
/// share: the entries after it on one of them belong to a term the other's history does not
/// hold (design.md, `diverged`, and the candidate's `fetch`).
///
/// An entry's term is the term whose start is the greatest at or below its seq. Within one
/// term only one master appended, in order, so two journals holding an entry of the same seq
/// and term hold the same entries up to it: the entries they share are a prefix, and it ends
/// at the last seq where their terms agree. (`TermStarts.keep`, the rule of design.md, looks at
/// one side's last term only and keeps entries of a term the other history never held.)
public struct TermHistory: Equatable, Sendable {
    /// Term to its first seq. A term may start after `lastSeq` (a master promoted at seq S
    /// starts its term at S+1 before it appends anything).
    public var starts: [Int64: Int64]
    /// The journal's last seq (0: empty).
    public var lastSeq: Int64

    /// A history from its fields; an empty `starts` means everything is in term 1.
    public init(starts: [Int64: Int64], lastSeq: Int64) {
        self.starts = starts.isEmpty ? [1: 1] : starts
        self.lastSeq = lastSeq
    }

    /// The term of the entry at `seq` (nil past the end).
    public func term(at seq: Int64) -> Int64? {
        guard seq >= 1, seq <= lastSeq else { return nil }
        return TermStarts(starts).term(ofSeq: seq)
    }

    /// The term of the last entry (1 for an empty journal).
    public var lastTerm: Int64 { term(at: lastSeq) ?? 1 }

    /// The last seq both histories hold in the same term (0: none): `K` of `diverged`, and
    /// what a voter sends a candidate's fetch after.
    public func sharedSeq(with other: TermHistory) -> Int64 {
        TermStarts(starts).sharedSeq(lastSeq: lastSeq, with: TermStarts(other.starts), otherLastSeq: other.lastSeq)
    }

    /// `{"1":1,"2":812}`, by term.
    public var startsJSON: JSONValue { .object(TermStarts(starts).json) }

    /// Reads `{"<term>":<first seq>,...}`: terms and seqs integers of 1 or more; nil otherwise.
    public static func starts(json: JSONValue) -> [Int64: Int64]? {
        guard let o = json.objectValue else { return nil }
        var starts: [Int64: Int64] = [:]
        for m in o.members {
            guard let t = Int64(m.key), t >= 1, let s = m.value.intValue, s >= 1 else { return nil }
            starts[t] = s
        }
        return starts
    }
}
