import Foundation
import JSON
import Logging
import OrderStore
import SyncCore

/// What a candidate receives from the terminals while it campaigns (Docs/PROTOCOL.md,
/// "Promotion"): election messages go to the `Candidacy` (votes, the end of a fetch), the
/// entries of a tail being fetched are collected, and everything else is held until the node is
/// master proper, a voter's hello counting as its pre-vote.
extension MasterNode {
    /// A terminal's message while the candidacy runs: taken here (true), or false when the
    /// node is master proper.
    func candidateHolds(_ bytes: [UInt8], from s: TerminalSession) -> Bool {
        guard let c = candidacy else { return false }
        let voter = s.secure?.terminal?.nodeId
        if let decoded = ElectionMessage.decode(bytes) {
            guard let voter else { return true }
            switch decoded {
            case .success(.vote(let v)) where v.term == c.term:
                let p = v.position
                carryOut(
                    c,
                    v.granted
                        ? c.election.voteGranted(from: voter, lastSeq: p.lastSeq, lastTerm: p.lastTerm)
                        : c.election.voteRefused(from: voter, reason: v.reason ?? "refused", rival: v.rival))
            case .success(.fetched) where ElectionMessage.isTailUnavailable(bytes):
                guard c.fetching?.voter == voter else { return true }
                c.fetching = nil
                logger.warning("promote.tail_unavailable", metadata: ["voter": "\(voter)"])
                carryOut(c, c.election.tailUnavailable())
            case .success(.fetched(let seq)):
                fetchedTail(c, from: voter, upTo: seq)
            case .failure(let error):
                logger.warning("election.invalid_message", metadata: ["peer.address": "\(s.address)", "error": "\(error.message)"])
            case .success:
                break
            }
            return true
        }
        if let voter, c.fetching?.voter == voter, let entry = Self.fetchedEntry(bytes) {
            c.fetching?.entries.append(entry)
            return true
        }
        c.hold(bytes, session: s.id)
        if let voter, let object = try? JSONParser.parse(bytes).objectValue, object["type"]?.stringValue == "hello" {
            let lastSeq = object["lastSeq"]?.intValue ?? 0
            carryOut(c, c.election.preVote(from: voter, lastSeq: lastSeq, lastTerm: object["lastTerm"]?.intValue ?? 1))
        }
        return true
    }

    /// A voter's link ended while the candidacy runs.
    func candidateLostLink(_ s: TerminalSession) {
        guard let c = candidacy, let voter = s.secure?.terminal?.nodeId else { return }
        carryOut(c, c.election.linkLost(from: voter))
    }

    /// A journal entry as a voter sends it in a fetch (its broadcast bytes, with seq and term);
    /// nil for anything else.
    static func fetchedEntry(_ bytes: [UInt8]) -> JournalEntry? {
        guard case .success(.applied(let op, let orders, let seq?, let opId, let origin, nil, _)) = ServerMessage.decode(bytes),
            let object = try? JSONParser.parse(bytes).objectValue
        else { return nil }
        return JournalEntry(
            seq: seq, term: object["term"]?.intValue ?? 1, opId: opId, origin: origin ?? "", operation: op,
            orderUUIDs: orders.map(\.uuid), message: bytes, recordedAtMillis: WallClock.nowMillis())
    }

    /// The voter sent its tail up to `seq`: applied in one commit, then the election goes on.
    private func fetchedTail(_ c: MasterCandidacy, from voter: String, upTo seq: Int64) {
        guard let fetch = c.fetching, fetch.voter == voter else { return }
        c.fetching = nil
        storeWrite({ db in try db.applyFetchedEntries(fetch.entries, atMillis: WallClock.nowMillis()) }) { [weak self] result in
            guard let self, self.candidacy === c else { return }
            switch result {
            case .success(let applied):
                do { try self.engine.journalExtended() } catch {
                    self.logger.error("promote.fetch_unread", metadata: ["error": "\(error)"])
                }
                self.logger.notice("promote.fetched", metadata: ["voter": "\(voter)", "entries": "\(applied)", "seq": "\(seq)"])
                self.carryOut(c, c.election.fetched(upTo: seq, entries: applied))
            case .failure(let error):
                self.logger.error("promote.fetch_failed", metadata: ["voter": "\(voter)", "error": "\(error)"])
                self.carryOut(c, c.election.fetchFailed())
            }
        }
    }
}
