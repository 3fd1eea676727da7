import Discovery
import Foundation
import JSON
import Logging
import NodePolicy
import OrderStore

/// Following a promoted member (Docs/PROTOCOL.md, "Promotion"): a service of the slave's store
/// whose TXT `id` is a member of the store (the standby copy's master or one of its paired
/// terminals) and whose TXT `term` is above the term the slave follows is taken at once: the
/// trusted master becomes that member's key (the earlier ids kept), the current link is
/// dropped, and services of lower terms are set aside. Nothing is persisted (the trust changes
/// in memory only) until the member proves the term over the IK handshake with its key: a
/// candidate's `promise`, a master's `ready` (`SlaveNode+TermTry`). A non-member's term is never
/// counted: its service goes the usual way (`master.untrusted` when it names another key).
extension SlaveNode {
    /// A member of the store, as the standby copy names it.
    struct Member: Equatable {
        /// Its node id.
        var nodeId: String
        /// Its 32-byte static public key.
        var publicKey: [UInt8]
    }

    /// The store's members this slave knows: the standby copy's master and the paired
    /// terminals not revoked. Empty when the standby copy is missing or unreadable.
    func members() -> [Member] {
        let read = try? writer.read { db -> [Member] in
            var out = try db.pairedTerminals().map { Member(nodeId: $0.nodeId, publicKey: $0.publicKey) }
            if let raw = try db.metadata(Self.standbyMasterKey), let master = try? JSONParser.parse(Array(raw.utf8)).objectValue,
                let hex = master["key"]?.stringValue, let key = Self.bytes(hex: hex), key.count == 32
            {
                out.append(Member(nodeId: NodeId.of(publicKey: key), publicKey: key))
            }
            return out
        }
        return read ?? []
    }

    /// A discovered service of the slave's protocol: true when the term it announces decided
    /// what happens to it here (followed, or left behind as of a lower term); false when it
    /// goes the usual way.
    func considerTerm(_ service: ResolvedService) -> Bool {
        let candidate = MasterCandidate(service)
        let store = configuration.store ?? engine.joinedStore
        guard let store, candidate.txt["store"] == store else { return false }
        let announced = candidate.term ?? 1
        if announced < followedTerm {
            // A master of an earlier term (an old master back): it steps down by itself.
            logger.debug("master.stale_term", metadata: ["service.name": "\(service.name)", "term": "\(announced)"])
            return true
        }
        guard let id = candidate.nodeId, id != nodeIdentity.nodeId else { return false }
        let key = Self.announcementKey(id: id, address: service.address, port: service.port, term: announced)
        // An announcement that did not prove its term: ignored for a while (`SlaveNode+TermTry`).
        if unprovenTerms.holds(key, now: loop.now.sinceBoot) { return true }
        // Followed already (a candidate then, a master now): its term and key are committed
        // once its `ready` proves them (`termTrySynced`).
        if trust.current?.master == id { return false }
        guard announced > followedTerm || (announced == followedTerm && candidate.isCandidate) else { return false }
        guard let member = members().first(where: { $0.nodeId == id }) else { return false }
        if candidate.isCandidate, candidate.txt["auto"] == "1", !grantsAutomaticPreVote(id, service) { return true }
        follow(member, term: announced, candidate: candidate.isCandidate, service: service, key: key)
        return true
    }

    /// Commits `term` as the one this slave follows (`sync.term`) and the trust as it stands
    /// (`master.trust`); `then` runs once both are on disk (or failed, logged).
    func commitTerm(_ term: Int64, then: @escaping () -> Void = {}) {
        followedTerm = term
        let trusted = trust.current
        let path = configuration.masterTrustPath
        writer.write({ db in
            try db.setMetadata(MasterCandidacy.termKey, "\(term)")
            try trusted?.write(to: path)
        }) { [weak self] result in
            if case .failure(let error) = result {
                self?.logger.error("master.follow_unsaved", metadata: ["term": "\(term)", "error": "\(error)"])
            }
            then()
        }
    }

    /// Follows `member` announcing `term`: trust, link and candidates move to it, in memory
    /// only until the member proves the term (`TermTry`).
    private func follow(_ member: Member, term: Int64, candidate: Bool, service: ResolvedService, key: String) {
        guard case .paired(var updated, let refused) = trust else { return }
        let previous = termTry?.previous ?? updated
        let previousId = updated.master
        guard updated.handOver(to: member.publicKey) else { return }
        trust = .paired(updated, refused: refused)
        candidates.trustedIds = trust.trustedIds
        // Services of earlier terms are left behind; the member's is the one to connect to.
        var leftBehind = termTry?.leftBehind ?? []
        for old in candidates.seen where (old.term ?? 1) < term {
            if candidates.lost(name: old.name, domain: old.domain) { leftBehind.append(old) }
        }
        _ = candidates.found(service)
        termTry = TermTry(
            previous: previous, announcement: key, term: term, service: MasterCandidate(service), leftBehind: leftBehind)
        logger.notice(
            "master.following",
            metadata: [
                "master.id": "\(member.nodeId)", "master.previous_id": "\(previousId)", "term": "\(term)",
                "role": "\(candidate ? "candidate" : "master")", "master.address": "\(service.address):\(service.port)",
            ])
        // Nothing is persisted until the member proves the term: a candidate's `promise`, a
        // master's `ready`; a failed attempt restores what was (`termTryFailed`).
        followsUnsaved = true
        if let link = linkState.link { link.abort(reason: "a member of the store announced a higher term") }
        considerTargets()
    }

    /// Bytes of lowercase or uppercase hex; nil for anything else.
    static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        var i = 0
        while i < digits.count {
            guard let hi = Self.nibble(digits[i]), let lo = Self.nibble(digits[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
