import JSON

/// The first sequence number of each term in one lineage (`sync.term_starts`,
/// `{"1":1,"2":812}`): which master applied which entry, and where two histories part
/// (`Docs/PROTOCOL.md` 7.1, 7.5).
public struct TermStarts: Equatable, Sendable {
    /// Term → its first seq.
    public var starts: [Int64: Int64]

    /// Term starts from a map; an empty map means term 1 from seq 1 (a store from before terms).
    public init(_ starts: [Int64: Int64] = [:]) {
        self.starts = starts
    }

    /// The JSON object `{"1":1,"2":812}`, terms in order.
    public var json: JSONObject {
        JSONObject(starts.sorted { $0.key < $1.key }.map { (String($0.key), JSONValue.int($0.value)) })
    }

    /// The term starts in `o`; members that are not a term and a seq are left out.
    public init(json o: JSONObject) {
        var starts: [Int64: Int64] = [:]
        for m in o.members {
            if let term = Int64(m.key), term >= 1, let seq = m.value.intValue, seq >= 1 { starts[term] = seq }
        }
        self.init(starts)
    }

    /// The term that applied entry `seq` in this history: the highest term starting at or
    /// before it (1 when none does).
    public func term(ofSeq seq: Int64) -> Int64 {
        starts.filter { $0.value <= seq }.map(\.key).max() ?? 1
    }

    /// The starts once term `term` begins at `seq` here (a promotion, `Docs/PROTOCOL.md` 7.6):
    /// `term` added, term 1 named, and every earlier term that starts at or after `seq` dropped:
    /// such a term applied nothing in this history (a slave keeps a master's `ready` starts
    /// before that master's first entry reaches it), and from `seq` on the entries are `term`'s.
    public func beginning(term: Int64, at seq: Int64) -> TermStarts {
        var s = starts.filter { $0.key >= term || $0.value < seq }
        if s[1] == nil { s[1] = 1 }
        s[term] = seq
        return TermStarts(s)
    }

    /// Divergence (`Docs/PROTOCOL.md` 7.5): how much of a terminal's journal, ending at
    /// (`lastSeq`, `lastTerm`), is also in this master's history (`masterLastSeq` its last
    /// entry). `lastSeq` when its last entry is the master's; else the seq before the first term
    /// after `lastTerm` began, at most `lastSeq`.
    public func keep(lastSeq: Int64, lastTerm: Int64, masterLastSeq: Int64) -> Int64 {
        guard lastSeq > 0, let next = starts.filter({ $0.key > lastTerm }).map(\.value).min() else { return lastSeq }
        if lastSeq <= masterLastSeq, term(ofSeq: lastSeq) == lastTerm { return lastSeq }
        return max(0, min(next - 1, lastSeq))
    }
}

/// A master's term and its lineage's term starts: what its `ready`, its snapshots' last part
/// and its broadcasts say of terms.
public struct MasterTerms: Equatable, Sendable {
    /// The master's current term.
    public var term: Int64
    public var starts: TermStarts

    /// Terms from their fields (term 1 and no starts: a store from before terms).
    public init(term: Int64 = 1, starts: TermStarts = TermStarts()) {
        self.term = term
        self.starts = starts
    }

    /// The term of the entry at `seq` (the current term at seq 0: nothing yet).
    public func term(ofSeq seq: Int64) -> Int64 {
        seq == 0 ? term : min(term, starts.term(ofSeq: seq))
    }

    /// `ready` with `"term"` and `"termStarts"`.
    public func readyBytes(seq: Int64, epoch: String?, store: String?) -> [UInt8] {
        var o = ServerMessage.ready(seq: seq, epoch: epoch, store: store).jsonObject()
        o["term"] = .int(term)
        o["termStarts"] = .object(starts.json)
        return JSONValue.object(o).serializedBytes()
    }
}
