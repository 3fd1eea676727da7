/// The terms and roles masters announce in their TXT records (`term=T`, `role=candidate|master`;
/// Docs/PROTOCOL.md, "Terms, standbys and promotion").
extension MasterCandidate {
    /// The term announced (`term=`); nil when absent (an older master: term 1) or malformed.
    public var term: Int64? {
        guard let raw = txt["term"], let t = Int64(raw), t >= 1 else { return nil }
        return t
    }

    /// Whether it announces itself a candidate of a promotion (`role=candidate`), not a master.
    public var isCandidate: Bool { txt["role"] == "candidate" }

    /// The node id announced (`id=`).
    public var nodeId: String? { txt["id"] }
}

extension MasterCandidates {
    /// The highest term announced by a service whose node id is one of `members` (1 when none
    /// announces one): a rogue's term is never counted.
    public func highestTerm(members: Set<String>) -> Int64 {
        seen.filter { $0.nodeId.map(members.contains) ?? false }.map { $0.term ?? 1 }.max() ?? 1
    }
}
