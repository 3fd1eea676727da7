/// Where two histories part, by their term starts (`Docs/PROTOCOL.md` 7, "Divergence across
/// terms"): the master's answer to a hello that carries the slave's `termStarts`, and a voter's
/// answer to a candidate's `fetch`.
///
/// Within one term only one master appended, in order, so two journals that hold an entry of
/// the same seq in the same term hold the same entries up to it: what they share is a prefix,
/// and it ends at the last seq where their terms agree. Term 1 begins at seq 1 in every history
/// (as in `term(ofSeq:)`), whether or not the starts name it.
extension TermStarts {
    /// The last seq that this history, ending at `lastSeq`, and `other`, ending at
    /// `otherLastSeq`, hold in the same term (0: none). Symmetric; at most the smaller last seq.
    public func sharedSeq(lastSeq: Int64, with other: TermStarts, otherLastSeq: Int64) -> Int64 {
        let mine = withTermOne
        let theirs = other.withTermOne
        let end = min(lastSeq, otherLastSeq)
        var shared: Int64 = 0
        for (term, start) in mine {
            guard let otherStart = theirs[term] else { continue }
            // The term's entries in each journal: from its start to the next term's start.
            let from = max(start, otherStart)
            let to = min(end, Self.segmentEnd(of: term, in: mine), Self.segmentEnd(of: term, in: theirs))
            if from <= to { shared = max(shared, to) }
        }
        return shared
    }

    /// The starts with term 1 at seq 1 when they do not name term 1.
    private var withTermOne: [Int64: Int64] {
        var s = starts
        if s[1] == nil { s[1] = 1 }
        return s
    }

    /// The last seq of term `term`'s entries in `starts`: before the first start of a later
    /// term (as in `term(ofSeq:)`, a later term owns the seqs from its start on). Below `term`'s
    /// start when a later term starts at the same seq: a term that never applied an entry here,
    /// as a slave records it from a master's `ready` before that master's first entry reached
    /// it, and then is promoted at that seq itself.
    private static func segmentEnd(of term: Int64, in starts: [Int64: Int64]) -> Int64 {
        guard starts[term] != nil else { return 0 }
        let next = starts.filter { $0.key > term }.map(\.value).min()
        return (next ?? Int64.max) - 1
    }
}
