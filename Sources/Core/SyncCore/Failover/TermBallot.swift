/// Terms as ballots owned by one member (Docs/PROTOCOL.md 7.16, "Ballots: who may bid a term").
///
/// Every member of a store (the master and each paired terminal, revoked ones too) has a member
/// number, unique within the store and never given twice: the master assigns it when a terminal
/// pairs (`paired_terminals.number`) and sends it to every standby with the members. A term
/// `T >= K` belongs to the member whose number is `T mod K`, and a candidate only ever bids a
/// term it owns: the smallest above every term it knows (`bid(number:above:)`). Two candidates
/// therefore never bid the same term, forced or not, manual or automatic, so even two forced
/// promotions that never hear of each other end in two different terms, and the step-down of
/// the lower one applies when they meet. Terms below `K` were bid by the `+1` rule of earlier
/// versions and stay valid; no new bid uses them.
public enum TermBallot {
    /// `K`: how many member numbers a round of terms holds. Numbers run from 1 to `K - 1`.
    public static let modulus: Int64 = 1024

    /// The member numbers a store may give, in order: the master's own first.
    public static let numbers: ClosedRange<Int64> = 1...(modulus - 1)

    /// The term member `number` bids when the highest term it knows (its `sync.term`, its vote,
    /// the terms members announce) is `known`: the smallest term above `known` that is
    /// `number` modulo `K`.
    public static func bid(number: Int64, above known: Int64) -> Int64 {
        precondition(numbers.contains(number), "member number \(number) is outside 1...\(modulus - 1)")
        let base = max(known, 0) / modulus * modulus + number
        return base > known ? base : base + modulus
    }

    /// The number of the member that owns `term`; nil for a term below `K` (bid by the `+1`
    /// rule of an earlier version: it names no owner).
    public static func owner(of term: Int64) -> Int64? {
        term >= modulus ? term % modulus : nil
    }

    /// The number to give the next member, above `highest` (the highest number the store gave,
    /// 0 when none); nil when every number is taken.
    public static func nextNumber(after highest: Int64) -> Int64? {
        let next = max(highest, 0) + 1
        return numbers.contains(next) ? next : nil
    }
}
