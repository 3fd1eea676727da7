// The candidate's arithmetic and its report: who votes, how many make a majority, names.

extension Candidacy {
    /// Every voter id, the candidate's own only when it votes.
    var voterIds: Set<String> {
        var ids = Set(configuration.voters.keys)
        ids.remove(configuration.nodeId)
        if configuration.isVoter { ids.insert(configuration.nodeId) }
        return ids
    }

    /// The candidate's own vote: 1 when it is a voter.
    var selfVotes: Int { configuration.isVoter ? 1 : 0 }

    /// True for a voter other than the candidate.
    func isOtherVoter(_ id: String) -> Bool {
        id != configuration.nodeId && configuration.voters[id] != nil
    }

    /// The names of `ids`, sorted (an id with no name stands for itself).
    func names(_ ids: Set<String>) -> [String] {
        ids.map { $0 == configuration.nodeId ? configuration.name : configuration.voters[$0] ?? $0 }.sorted()
    }

    /// The voters other than the candidate that neither granted nor refused.
    func unreachable(_ ballot: Ballot) -> [String] {
        names(voterIds.subtracting([configuration.nodeId]).subtracting(ballot.granted.keys).subtracting(ballot.refused.keys))
    }

    /// The report of a ballot: promoted when `refusal` is nil.
    func report(_ ballot: Ballot, refusal: PromotionReport.Refusal?) -> PromotionReport {
        var promised = Set(ballot.granted.keys)
        if configuration.isVoter { promised.insert(configuration.nodeId) }
        let refused = ballot.refused.map { PromotionReport.RefusedVote(name: names([$0.key])[0], reason: $0.value) }
        return PromotionReport(
            term: configuration.term, seq: ballot.position.lastSeq, voters: names(voterIds), promised: names(promised),
            unreachable: unreachable(ballot), refused: refused.sorted { ($0.name, $0.reason) < ($1.name, $1.reason) },
            fetched: ballot.fetchedFrom.map { PromotionReport.Fetched(from: names([$0])[0], entries: ballot.fetchedEntries) },
            forced: ballot.forced, refusal: refusal)
    }

    /// `2 of 5 voters promised, 3 needed`.
    func noMajorityMessage(promised: Int, reachable: Bool = false) -> String {
        let verb = reachable ? "were reachable" : "promised"
        return "\(promised) of \(voterIds.count) voters \(verb), \(majority) needed: start the missing voters, or promote "
            + "with --force if the master is gone for good"
    }

    /// The refusal of a forced candidate told by `voter` of `rival`.
    func rivalRefusal(_ rival: TermVote, votersName voter: String) -> PromotionReport.Refusal {
        .init(
            .rivalCandidate,
            "\(voter) answered that \(names([rival.nodeId])[0]) holds term \(rival.term) (this terminal bid for term "
                + "\(configuration.term)): another promotion or master is running; --force does not override it, nothing was "
                + "promoted")
    }
}
