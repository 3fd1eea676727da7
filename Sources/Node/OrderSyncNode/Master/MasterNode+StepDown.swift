import Discovery
import Foundation
import Logging
import NodePolicy
import OrderStore
import SyncCore

/// Step-down (Docs/PROTOCOL.md, "Promotion"): a master that sees a member of its store announce
/// a higher term in its own browse (a slave promoted while this master was away) stops taking
/// writes, logs `master.stepped_down` and plays slave of that member on the same loop, store
/// writer and front-ends. Its replica state comes from its journal (last seq, the lineage, its
/// term); the new master then tells it where its history diverged.
extension MasterNode {
    /// A service found by the master's own browse. An announcement proves nothing (node ids
    /// are public), and the slaves that see it try it at once (and leave this master for a
    /// moment): the master decides `settle` later, once a device posing as a member has failed
    /// their handshakes and they are back. Then, while enough of its voters are connected to
    /// make a majority with itself, no promotion can have won without them: it stays. True
    /// when it made the master step down.
    @discardableResult
    func considerStepDown(_ service: ResolvedService, settled: Bool = false) -> Bool {
        guard candidacy == nil, !shuttingDown, service.txt["proto"] == orderSyncProtocolName,
            service.txt["store"] == storeId, let id = service.txt["id"], id != keys.current.nodeId,
            let raw = service.txt["term"], let announced = Int64(raw), announced > term
        else { return false }
        let at = "\(service.address):\(service.port)"
        guard let member = try? writer.read({ try $0.pairedTerminals().first { $0.nodeId == id } }) else {
            // Not a member: its term is not counted.
            logger.warning(
                "master.untrusted",
                metadata: [
                    "master.address": "\(at)", "master.announced_id": "\(id)", "term": "\(announced)",
                    "hint": "a service of this store announcing a higher term whose key is no paired terminal of it is ignored",
                ])
            return false
        }
        guard settled else {
            _ = loop.schedule(after: Self.stepDownSettle) { [weak self] in self?.considerStepDown(service, settled: true) }
            return false
        }
        // Only voting standbys count: a handheld keeps a copy but has no say in an election.
        let votingStandbys = engine.standbys.filter(\.voter).count
        if let voters = FailoverStatus.voters(writer, masterId: nodeIdentity.nodeId, masterName: terminalName), voters.count > 1,
            votingStandbys + 1 >= voters.majority
        {
            logger.warning(
                "master.term_unproven",
                metadata: [
                    "master.address": "\(at)", "master.announced_id": "\(id)", "term": "\(announced)",
                    "standbys": "\(votingStandbys)", "majority": "\(voters.majority)",
                    "hint": "a higher term announced while a majority of the voters is still connected here is not followed",
                ])
            return false
        }
        stepDown(to: member, term: announced, reason: "a member announced term \(announced)")
        return true
    }

    /// How long after a member's announced higher term the master counts its voters.
    static let stepDownSettle = Duration.seconds(3)

    /// A terminal follows `newer`, a term above this master's (`stale_master`): the member
    /// announcing it is looked for afresh, and found, makes this master step down.
    func staleTermSeen(_ newer: Int64) {
        guard newer > term else { return }
        logger.warning("master.stale_term", metadata: ["term": "\(term)", "term.seen": "\(newer)"])
        discovery?.rebrowse(type: configuration.serviceType)
    }

    /// The role leaves for another with a group committed or queued (`finishGroups`): the
    /// committed group's local API callers get its real outcome (`committed`: its COMMIT's
    /// result), and writes still queued are refused `503 stepped_down`, not applied: this node
    /// takes no more writes as the master, and a retry reaches the role that follows.
    func answerAtHandOver(_ committed: Result<Void, StoreError>?) {
        let failed: Bool
        if case .failure = committed { failed = true } else { failed = false }
        for a in group.answers {
            if failed, let f = a.failed { a.respond(f.status, f.body) } else { a.respond.send(a.status, a.body) }
        }
        group.answers = []
        // Writes that waited for standbys: on this disk, not known to be on another (a write of
        // the failed group gets its refusal); the kept answer of a retried opId stands.
        // With `--auto-failover` and the lease lapsed, they are refused instead (not acknowledged).
        for w in takeCommittingReplications() {
            if failed, let f = w.failed {
                w.respond(f.status, f.body)
            } else if let r = leaseRefusesLateAnswer(seq: w.seq) {
                w.respond(r.status, r.body)
            } else {
                w.respond.send(w.status, w.unreplicated)
            }
        }
        for w in replicas.waits.drain().map(\.answer) {
            if let r = leaseRefusesLateAnswer(seq: w.seq) { w.respond(r.status, r.body) } else { w.respond.send(w.status, w.unreplicated) }
        }
        var kept: [GroupWork] = []
        for work in group.queue[group.queueHead...] {
            switch work {
            case .local(_, _, _, let respond), .foreign(_, _, _, let respond):
                respond(503, LocalAPIRoute.errorBody(code: "stepped_down", message: Self.steppedDownMessage))
            case .message, .disconnected, .maintenance, .ownOutbox:
                kept.append(work)
            }
        }
        (group.queue, group.queueHead) = (kept, 0)
    }

    /// Why a write reaching a master that is leaving its role is refused.
    static let steppedDownMessage =
        "this node stopped being the store's master before your write was applied (nothing of it was stored); send it again"

    /// Stops taking writes and plays slave of `member` (its term `term`) on the same seat: in
    /// one commit before the switch the store becomes a replica (`node.role=slave`, the replica
    /// state from the journal) and `master.trust` names the member's key.
    func stepDown(to member: PairedTerminal, term newTerm: Int64, reason: String) {
        guard candidacy == nil, !shuttingDown else { return }
        let lastSeq = engine.lastSeq
        logger.warning(
            "master.stepped_down",
            metadata: [
                "term": "\(term)", "term.new": "\(newTerm)", "master.id": "\(member.nodeId)", "master.name": "\(member.name)",
                "seq": "\(lastSeq)", "reason": "\(reason)",
            ])
        // No more writes: the role leaves at once (its links close, its front-ends are handed
        // over); the store becomes a replica between the two roles.
        var slave = configuration
        slave.role = .slave
        slave.masterURL = nil
        slave.port = 0
        // A promoted node started as `ordersync slave --pair CODE` keeps the code in its
        // configuration: its slave role follows the member by key and must not pair anew.
        slave.pairingCode = nil
        let (store, lineage, oldTerm) = (storeId, engine.epoch, term)
        let trust = MasterTrust(
            store: store, publicKey: member.publicKey, pairedAtMillis: WallClock.nowMillis(),
            codeDigest: MasterTrust.codeDigest(ofCodeBytes: []))
        let trustPath = configuration.masterTrustPath
        let (seat, loop, discovery, logger) = (self.seat, self.loop, self.discovery, self.logger)
        seat.requestHandOver?("stepped down") {
            try seat.writer.writeBetweenRoles { db in
                try db.setMetadata("node.role", NodeRole.slave.rawValue)
                try db.becomeReplicaOfOwnJournal(lineage: lineage, store: store, term: oldTerm)
                try trust.write(to: trustPath)
            }
            return .slave(
                try SlaveNode(
                    configuration: slave, loop: loop, dataDirectory: seat.dataDirectory, discovery: discovery, logger: logger,
                    reconnectJitter: .downToHalf(), seat: seat))
        }
    }
}
