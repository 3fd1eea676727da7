import EventLoopIO
import Foundation
import Logging
import NodePolicy

/// A member's higher term, announced but not yet proven: the in-memory trust moved to that
/// member and the slave connects to the announced address; what it replaced is kept here so a
/// failed attempt puts the slave back exactly as it was.
struct TermTry {
    /// The trust before the first unproven follow (restored when the attempt fails).
    var previous: MasterTrust
    /// The announcement being tried (`SlaveNode.announcementKey`).
    var announcement: String
    /// The term the member announced.
    var term: Int64
    /// The member's service as announced.
    var service: MasterCandidate
    /// Services of lower terms set aside when the member was followed (found again on failure).
    var leftBehind: [MasterCandidate]
}

/// Announcements (member id, address, term) whose term was not proven: not tried again until
/// `hold` has passed. Bounded: the oldest is dropped past `limit`.
struct UnprovenTerms {
    /// How long an unproven announcement is ignored.
    static let hold: Duration = .seconds(60)
    /// The most announcements remembered.
    static let limit = 64
    private var until: [String: Duration] = [:]

    /// True while `key` is held back at `now`.
    func holds(_ key: String, now: Duration) -> Bool {
        guard let end = until[key] else { return false }
        return now < end
    }

    /// Holds `key` back from `now`; true when it was not held already (log it then).
    mutating func record(_ key: String, now: Duration) -> Bool {
        let fresh = !holds(key, now: now)
        if until.count >= Self.limit, let oldest = until.min(by: { $0.value < $1.value })?.key { until[oldest] = nil }
        until[key] = now + Self.hold
        return fresh
    }
}

/// Proving a member's higher term (Docs/PROTOCOL.md, "Terms the slave follows"): nothing is
/// persisted when a member announces a higher term; only the IK handshake with the member's key
/// and its `ready` carrying that term (or its `promise`, see `SlaveNode+Voting`) commit it.
extension SlaveNode {
    /// One announcement: member id, address and announced term.
    static func announcementKey(id: String, address: String, port: UInt16, term: Int64) -> String {
        "\(id)|\(address):\(port)|\(term)"
    }

    /// The link to the tried member is synced (its `ready` came): its term is committed with the
    /// trust when `ready` carried it; otherwise the attempt is unproven and the link dropped.
    func termTrySynced() {
        guard let attempt = termTry else { return }
        guard engine.term >= attempt.term else {
            logUnproven(attempt, reason: "its ready carries term \(engine.term)")
            linkState.link?.abort(reason: "the member did not prove the term it announced")
            return
        }
        termTry = nil
        followsUnsaved = false
        commitTerm(max(followedTerm, engine.term))
    }

    /// A link to `target` ended: when it was the attempt on a member's unproven term, the trust
    /// and the services it replaced come back and the announcement is held back. True then.
    func termTryFailed(target: LinkTarget, reason: String) -> Bool {
        guard let attempt = termTry, target.url.host == attempt.service.address, target.url.port == attempt.service.port
        else { return false }
        termTry = nil
        followsUnsaved = false
        logUnproven(attempt, reason: reason)
        if case .paired(_, let refused) = trust { trust = .paired(attempt.previous, refused: refused) }
        candidates.trustedIds = trust.trustedIds
        _ = candidates.lost(name: attempt.service.name, domain: attempt.service.domain)
        for service in attempt.leftBehind { _ = candidates.found(service) }
        return true
    }

    private func logUnproven(_ attempt: TermTry, reason: String) {
        guard unprovenTerms.record(attempt.announcement, now: loop.now.sinceBoot) else { return }
        logger.warning(
            "master.term_unproven",
            metadata: [
                "announcement": "\(attempt.announcement)", "term": "\(attempt.term)", "reason": "\(reason)",
                "master.trusted_id": "\(attempt.previous.master)",
                "hint": "a member's id announced a higher term but did not prove it; back to the master this terminal follows",
            ])
    }
}
