import EventLoopIO
import Foundation
import JSON
import Logging
import NodePolicy
import OrderStore
import SyncCore

/// The master's `MasterLease` and what waits on it (`--auto-failover`).
struct LeaseWatch {
    /// The pure lease.
    var lease: MasterLease
    /// The next tick.
    var timer: TimerHandle?
    /// Terminals' operations held while the lease is lapsed (and the messages of their links
    /// behind them), in arrival order and bounded: they are not acknowledged, so they stay in
    /// the terminals' outboxes until they are taken.
    var held = LeaseHeldMessages<Int>()
}

/// The lease of a master under automatic failover (Docs/PROTOCOL.md, "Automatic failover"): it
/// acknowledges writes only while it has heard (any frame, a ping's answer included) within the
/// lease from enough voters to make a majority with itself. Without one, local writes are
/// refused `no_quorum` (503) and the terminals' operations are held unacknowledged (they stay
/// in their outboxes) until a majority is heard again. Voters stand for election only after a
/// longer silence than the lease, so an old master has stopped acknowledging before any voter
/// may promise another node.
extension MasterNode {
    /// How often the voters heard are counted.
    static let leaseTick: Duration = .milliseconds(100)

    /// The store's voters: this master and the paired terminals not revoked with the voter flag.
    private func storeVoters() -> Set<String> {
        let ids = try? writer.read { db in
            try db.memberTerminals().filter { $0.revokedMillis == nil && $0.voter }.map(\.member.id)
        }
        return Set(ids ?? []).union([nodeIdentity.nodeId])
    }

    /// The store's members changed, the master starts (`announceMembers()`) or a candidate
    /// becomes master proper: with `--auto-failover`, the lease starts once the store has 3
    /// voters or more (with fewer it stays off, with an error: the two-node problem), and counts
    /// the voters as they are now. A candidate has none: it acknowledges nothing anyway.
    func leaseMembersChanged() {
        guard configuration.autoFailover, candidacy == nil else { return }
        let voters = storeVoters()
        if var watch = lease {
            let change = watch.lease.votersChanged(voters, ownId: nodeIdentity.nodeId, nowMillis: millis(loop.now))
            lease = watch
            if let change { leaseChanged(change) }
            return
        }
        guard voters.count >= AutoFailover.minimumVoters else {
            logger.error(
                "auto_failover.off",
                metadata: [
                    "voters": "\(voters.count)",
                    "reason":
                        "automatic failover needs 3 or more voters: with 2, a lost link and a dead master look the same to each; use ordersync promote",
                ])
            return
        }
        let timing = AutoFailoverTiming.standard
        lease = LeaseWatch(lease: MasterLease(leaseMillis: timing.leaseMillis, voters: voters, ownId: nodeIdentity.nodeId))
        logger.info("auto_failover.on", metadata: ["voters": "\(voters.count)", "lease_ms": "\(timing.leaseMillis)"])
        metrics.leaseHeld.set(Int64(0))
        _ = metrics.automaticPromotions
        scheduleLeaseTick()
    }

    private func scheduleLeaseTick() {
        lease?.timer = loop.schedule(after: Self.leaseTick) { [weak self] in self?.leaseTick() }
    }

    private func millis(_ instant: MonotonicInstant) -> Int64 { instant.sinceBoot.wholeMilliseconds }

    /// Counts the voters heard on their open links and carries out a change of the lease, judged
    /// now (a link's last frame is in the past: judged then, a cut master's lease would flap).
    private func leaseTick() {
        guard var watch = lease, !shuttingDown else { return }
        watch.timer = nil
        let now = millis(loop.now)
        var changes: [MasterLease.Change] = []
        for s in sessions.values where s.phase == .open {
            guard let id = s.secure?.terminal?.nodeId else { continue }
            changes += [watch.lease.heard(from: id, atMillis: millis(s.transport.lastHeard), nowMillis: now)].compactMap { $0 }
        }
        changes += [watch.lease.tick(nowMillis: now)].compactMap { $0 }
        lease = watch
        for change in changes { leaseChanged(change) }
        scheduleLeaseTick()
    }

    private func leaseChanged(_ change: MasterLease.Change) {
        switch change {
        case .lapsed(let heard, let majority):
            metrics.leaseHeld.set(Int64(0))
            logger.error(
                "lease.lapsed",
                metadata: [
                    "heard": "\(heard)", "majority": "\(majority)",
                    "hint": "writes are refused no_quorum until a majority of the voters is heard again",
                ])
        case .regained(let heard, let majority):
            let refused = lease?.held.refused ?? 0
            logger.notice("lease.regained", metadata: ["heard": "\(heard)", "majority": "\(majority)", "refused": "\(refused)"])
            metrics.leaseHeld.set(Int64(1))
            let held = lease?.held.release() ?? []
            for (session, bytes) in held where sessions[session] != nil {
                enqueue(.message(session: session, bytes: bytes))
            }
        }
    }

    /// A local write while the lease is lapsed: answered `503 no_quorum`; false otherwise.
    func leaseRefusesWrite(_ respond: LocalAPIServer.Respond) -> Bool {
        guard let watch = lease, !watch.lease.isHeld else { return false }
        let heard = watch.lease.heardCount(nowMillis: millis(loop.now))
        respond(
            503,
            LocalAPIRoute.errorBody(
                code: "no_quorum",
                message:
                    "this master hears \(heard) of the \(watch.lease.majority) voters a write needs; nothing was written, try again in a moment"
            ))
        return true
    }

    /// The answer to a local write committed earlier and answered only now (it waited for a
    /// standby until `--sync-timeout`), when the lease has lapsed since: `503 no_quorum`, not
    /// acknowledged. A new master may have acknowledged writes by now (its voters waited out
    /// this lease), so this one must not; the write stays in this journal, and if another
    /// master took over it is queued again with its op id when this node steps down (7.13).
    /// Nil while the lease is held or off.
    func leaseRefusesLateAnswer(seq: Int64) -> (status: Int, body: JSONValue)? {
        guard let watch = lease, !watch.lease.isHeld else { return nil }
        let heard = watch.lease.heardCount(nowMillis: millis(loop.now))
        logger.warning(
            "lease.late_answer_refused",
            metadata: ["seq": "\(seq)", "heard": "\(heard)", "majority": "\(watch.lease.majority)"])
        return (
            503,
            LocalAPIRoute.errorBody(
                code: "no_quorum",
                message:
                    "written on this master only and not acknowledged: it lost a majority of the voters (\(heard) of \(watch.lease.majority)) while waiting for a standby; send it again with the same opId"
            )
        )
    }

    /// How long a terminal whose operation was refused (what the lapsed lease holds is at its
    /// bound) waits before it sends it again.
    static let leaseRefusedRetryMillis: Int64 = 1000

    /// A terminal's message while the lease is lapsed: an operation (and whatever follows it on
    /// that link) is held unacknowledged, within `LeaseHeldMessages`' bound; beyond it an
    /// operation is refused `rate_limited` (the terminal sends it again), and a message that must
    /// wait behind held ones ends its link. True when the message was taken care of here.
    func leaseHolds(_ bytes: [UInt8], from s: TerminalSession) -> Bool {
        guard var watch = lease, !watch.lease.isHeld else { return false }
        let isOperation = (try? JSONParser.parse(bytes).objectValue)?["operation"] != nil
        let decision = watch.held.offer(bytes, isOperation: isOperation, from: s.id)
        lease = watch
        let name = engine.peers[s.id]?.terminalName ?? s.address
        switch decision {
        case .pass:
            return false
        case .held:
            return true
        case .refuse:
            metrics.leaseRefused.increment()
            let heard = watch.lease.heardCount(nowMillis: millis(loop.now))
            if watch.held.refused == 1 {
                logger.warning(
                    "lease.held_full",
                    metadata: [
                        "terminal": "\(name)", "held": "\(watch.held.held.count)", "bytes": "\(watch.held.bytes)",
                        "most": "\(watch.held.mostMessages)", "most_bytes": "\(watch.held.mostBytes)",
                    ])
            }
            let reason =
                "this master cannot acknowledge writes now (it hears \(heard) of the \(watch.lease.majority) voters a write needs) "
                + "and holds the most it may (\(watch.held.mostMessages) messages, \(watch.held.mostBytes) bytes); nothing was applied"
            perform(engine.refuseUnheld(bytes, from: s.id, retryAfter: Self.leaseRefusedRetryMillis, because: reason))
            return true
        case .close:
            logger.warning("lease.held_link_closed", metadata: ["terminal": "\(name)", "held": "\(watch.held.held.count)"])
            perform([
                .close(peer: s.id, code: MasterEngine.tryAgainLater, reason: "lease lapsed and held messages at their bound")
            ])
            return true
        }
    }

    /// The lease as status shows it: nil without `--auto-failover`.
    func autoFailoverStatus() -> AutoFailoverStatus? {
        guard configuration.autoFailover else { return nil }
        let leaseMillis = AutoFailoverTiming.standard.leaseMillis
        guard let watch = lease else { return AutoFailoverStatus(state: .off, leaseMillis: leaseMillis) }
        return AutoFailoverStatus(
            state: watch.lease.isHeld ? .held : .lapsed, leaseMillis: watch.lease.leaseMillis,
            heard: watch.lease.heardCount(nowMillis: millis(loop.now)), majority: watch.lease.majority)
    }
}
