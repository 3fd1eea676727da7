import Foundation
import Logging
import NodePolicy
import OrderStore
import SyncCore

/// A slave as a voter of a promotion (Docs/PROTOCOL.md, "Promotion"): the candidate it pre-voted
/// for (by connecting) asks its `promise`; the slave grants it by the `FollowPolicy` rules,
/// commits `sync.term` and `sync.vote` before it answers `vote`, and sends the candidate its
/// journal entries after a seq on `fetch`, then `fetched`.
extension SlaveNode {
    /// An election message from the node this slave is linked to: true when it was one.
    func electionMessage(_ bytes: [UInt8]) -> Bool {
        guard let decoded = ElectionMessage.decode(bytes) else { return false }
        guard let link = linkState.link, let candidateId = trust.current?.master else { return true }
        switch decoded {
        case .failure(let error):
            logger.warning("election.invalid_message", metadata: ["error": "\(error.message)"])
        case .success(.promise(let term)):
            answerPromise(term, from: candidateId, on: link)
        case .success(.fetch(let after, let termStarts)):
            sendTail(after: after, termStarts: TermStarts(termStarts), on: link)
        case .success(.vote), .success(.fetched):
            // A voter's and a fetched voter's messages: a candidate's to receive, not a slave's.
            break
        }
        return true
    }

    /// Where this slave's history ends: its replica's last seq and that entry's term (after a
    /// snapshot the standby journal is empty and the replica is at `standby.base`).
    func logPosition() -> LogPosition {
        let position = try? writer.read { try $0.standbyPosition() }
        return position ?? LogPosition(lastSeq: engine.lastSeq, lastTerm: 1)
    }

    /// The `FollowPolicy` of what this slave holds now.
    private func followPolicy() -> FollowPolicy? {
        try? writer.read { db in
            var members: [String: String] = [:]
            for t in try db.memberTerminals() where t.revokedMillis == nil { members[t.member.id] = t.member.key }
            if let m = try db.standbyMaster() { members[m.id] = m.key }
            return FollowPolicy(
                nodeId: nodeIdentity.nodeId, term: try db.term(),
                vote: try db.vote().map { TermVote(term: $0.term, nodeId: $0.nodeId) }, members: members,
                followedMaster: followedMaster)
        }
    }

    /// The master this slave follows in its current term (`FollowPolicy.followedMaster`): the
    /// trusted master once its link is live. Nil whenever the slave raised its term and has not
    /// reached that term's master yet: after a promise or a pre-vote (`followsUnsaved`), and
    /// while the link to a higher-term master it turned to is not live.
    var followedMaster: String? {
        guard !followsUnsaved, case .live = linkState else { return nil }
        return trust.current?.master
    }

    /// Grants or refuses `term` to `candidate`; a grant is committed before it is answered.
    private func answerPromise(_ term: Int64, from candidate: String, on link: MasterLink) {
        let position = logPosition()
        guard let policy = followPolicy() else { return }
        switch policy.grant(promise: term, from: candidate) {
        case .refused(let reason):
            let rival = policy.rival(against: term, from: candidate)
            logger.notice(
                "election.vote_refused",
                metadata: [
                    "term": "\(term)", "candidate": "\(candidate)", "reason": "\(reason)",
                    "rival": "\(rival.map { "\($0.nodeId) in term \($0.term)" } ?? "-")",
                ])
            let vote = ElectionMessage.Vote(term: term, granted: false, position: position, reason: reason, rival: rival)
            link.send(ElectionMessage.vote(vote).encodedBytes())
        case .granted(let persist):
            let grant = { [weak self, weak link] in
                guard let self, let link, self.linkState.link === link else { return }
                self.logger.notice("election.vote_granted", metadata: ["term": "\(term)", "candidate": "\(candidate)"])
                link.send(ElectionMessage.vote(.init(term: term, granted: true, position: position)).encodedBytes())
            }
            guard let persist else { return grant() }
            followedTerm = max(followedTerm, persist.term)
            writer.write({ db in
                try db.setTerm(persist.term)
                try db.setVote(term: persist.term, nodeId: persist.nodeId)
            }) { [weak self] result in
                if case .failure(let error) = result {
                    self?.logger.error("election.vote_unsaved", metadata: ["term": "\(term)", "error": "\(error)"])
                    return
                }
                grant()
            }
        }
    }

    /// Answers a candidate's fetch: its journal ends at `after` and its terms began at
    /// `termStarts`. Sends the standby journal's entries after the last seq both journals hold
    /// in the same term (`TermStarts.sharedSeq`), as their broadcast bytes, then `fetched` with
    /// the last seq sent (the shared seq when none). A journal that begins after the entry right
    /// after the shared one (compacted, or emptied by a snapshot) cannot give a gapless tail: it
    /// answers `ElectionMessage.tailUnavailable` instead.
    private func sendTail(after: Int64, termStarts: TermStarts, on link: MasterLink) {
        let tail = try? writer.read { db -> (shared: Int64, entries: [JournalEntry], gap: Bool) in
            let last = try db.standbyPosition().lastSeq
            let shared = try db.termStarts().sharedSeq(lastSeq: last, with: termStarts, otherLastSeq: after)
            let first = try db.firstJournalSeq() ?? last + 1
            let gap = shared < last && first > shared + 1
            return (shared, gap ? [] : try db.journalEntries(after: shared, limit: 100_000), gap)
        }
        guard let tail else {
            // Unreadable: no `fetched`; the candidate's fetch times out and it tries the next voter.
            logger.error("election.tail_unread", metadata: ["after": "\(after)"])
            return
        }
        if tail.gap {
            logger.warning("election.tail_unavailable", metadata: ["after": "\(after)", "shared": "\(tail.shared)"])
            return link.send(ElectionMessage.tailUnavailable(shared: tail.shared))
        }
        for e in tail.entries { link.send(e.message) }
        link.send(ElectionMessage.fetched(seq: tail.entries.last?.seq ?? tail.shared).encodedBytes())
        logger.notice(
            "election.tail_sent",
            metadata: ["after": "\(after)", "shared": "\(tail.shared)", "entries": "\(tail.entries.count)"])
    }
}
