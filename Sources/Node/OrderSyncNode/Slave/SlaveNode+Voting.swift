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
        case .success(.fetch(let after)):
            sendTail(after: after, on: link)
        case .success(.vote), .success(.fetched):
            // A voter's and a fetched voter's messages: a candidate's to receive, not a slave's.
            break
        }
        return true
    }

    /// Where this slave's standby journal ends.
    func logPosition() -> LogPosition {
        let position = try? writer.read { db -> LogPosition in
            let seq = try db.lastJournalSeq()
            return LogPosition(lastSeq: seq, lastTerm: try db.journalEntry(seq: seq)?.term ?? 1)
        }
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
                followedMaster: nil)
        }
    }

    /// Grants or refuses `term` to `candidate`; a grant is committed before it is answered.
    private func answerPromise(_ term: Int64, from candidate: String, on link: MasterLink) {
        let position = logPosition()
        guard let policy = followPolicy() else { return }
        switch policy.grant(promise: term, from: candidate) {
        case .refused(let reason):
            logger.notice("election.vote_refused", metadata: ["term": "\(term)", "candidate": "\(candidate)", "reason": "\(reason)"])
            link.send(ElectionMessage.vote(.init(term: term, granted: false, position: position, reason: reason)).encodedBytes())
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

    /// Sends the standby journal's entries after `after` (as their broadcast bytes), then
    /// `fetched` with the last seq sent.
    private func sendTail(after: Int64, on link: MasterLink) {
        let entries = (try? writer.read { try $0.journalEntries(after: after, limit: 100_000) }) ?? []
        for e in entries { link.send(e.message) }
        link.send(ElectionMessage.fetched(seq: entries.last?.seq ?? after).encodedBytes())
        logger.notice("election.tail_sent", metadata: ["after": "\(after)", "entries": "\(entries.count)"])
    }
}
