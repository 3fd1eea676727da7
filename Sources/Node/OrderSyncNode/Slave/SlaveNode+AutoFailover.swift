import Discovery
import EventLoopIO
import Foundation
import Logging
import NodePolicy
import OrderStore
import SyncCore

/// The slave's `AutoFailover` and the timer that asks it (`--auto-failover`).
struct AutoFailoverWatch {
    /// The pure policy.
    var policy: AutoFailover
    /// Its place among the store's voting slaves sorted by node id (nil until the standby copy
    /// names them), and its jitter's seed.
    var place: VotingPlace?
    let seed: UInt64
    /// The next tick.
    var timer: TimerHandle?
    /// True once a store of fewer than 3 voters was logged (once per process).
    var loggedTooFewVoters = false
    /// An automatic candidate refused while the master was still heard: considered again on
    /// each tick, and pre-voted for once the master has been silent for the whole lease.
    var refusedCandidate: (service: ResolvedService, atMillis: Int64)?
}

/// A voter's place among the store's voting slaves, and what it was worked out from: it is
/// read from the store again only when the members were committed since, or the slave follows
/// another master (not on every tick).
struct VotingPlace: Equatable {
    /// 0 for the first voting slave by node id.
    var place: Int
    /// The voting slaves (the master they watch left out).
    var votingSlaves: Int
    /// `SlaveEngine.membersCommitted` and the master followed when it was read.
    var membersCommitted: Int
    var master: String?
}

/// Automatic failover on a voter slave (Docs/PROTOCOL.md, "Automatic failover"): when its master
/// has been silent (no frame, a ping's answer included) for longer than the election timeout
/// plus its stagger and jitter, it starts the candidacy `ordersync promote` runs, marked
/// automatic (TXT `auto=1`) and never forced. It grants an automatic candidate its pre-vote only
/// when it has not heard its master for the election timeout (the lease plus a margin). A store of fewer than 3 voters never
/// fails over by itself: the two-node problem (a lost link and a dead master look the same).
extension SlaveNode {
    /// How often the silence is checked.
    static let autoFailoverTick: Duration = .milliseconds(100)

    /// Milliseconds of the loop's clock.
    func millis(_ instant: MonotonicInstant) -> Int64 { instant.sinceBoot.wholeMilliseconds }

    /// The store's voters as the standby copy names them (the master and the paired terminals
    /// with the voter flag), id to name; empty without a standby copy.
    func standbyVoters() -> [String: String] {
        let read = try? writer.read { db -> [String: String] in
            var voters: [String: String] = [:]
            for t in try db.memberTerminals() where t.revokedMillis == nil && t.voter { voters[t.member.id] = t.member.name }
            if let m = try db.standbyMaster() { voters[m.id] = m.name }
            return voters
        }
        return read ?? [:]
    }

    /// Starts the watch (from `start()`), when `--auto-failover` is on and this terminal is a
    /// voter; a standby copy of fewer than 3 voters turns it off with an error.
    func startAutoFailover() {
        guard configuration.autoFailover else { return }
        let me = nodeIdentity.nodeId
        let voters = standbyVoters()
        if !voters.isEmpty {
            guard voters.count >= AutoFailover.minimumVoters else {
                logTooFewVoters(voters.count)
                return
            }
            guard voters[me] != nil else {
                logger.notice("auto_failover.off", metadata: ["reason": "this terminal is not a voter (paired as a handheld)"])
                return
            }
        }
        let place = votingPlace()
        let seed = me.utf8.reduce(UInt64(14_695_981_039_346_656_037)) { ($0 ^ UInt64($1)) &* 1_099_511_628_211 }
        let policy = AutoFailover(
            rank: AutoFailover.rank(currency: .current, placeAmongVoters: place?.place ?? 0, votingSlaves: place?.votingSlaves ?? 1),
            seed: seed, nowMillis: millis(loop.now))
        autoFailover = AutoFailoverWatch(policy: policy, place: place, seed: seed)
        logger.info(
            "auto_failover.on",
            metadata: [
                "voters": "\(voters.count)", "lease_ms": "\(policy.timing.leaseMillis)",
                "stand_after_ms": "\(policy.standAfterMillis)",
            ])
        scheduleAutoFailoverTick()
    }

    /// Voters equally current stand one after the other, by their place among the slaves that
    /// vote (the master they all watch left out); nil while the standby copy names no voters.
    private func votingPlace() -> VotingPlace? {
        let voters = standbyVoters()
        guard !voters.isEmpty else { return nil }
        let master = try? writer.read { try $0.standbyMaster()?.id }
        let slaves = voters.keys.filter { $0 != master }.sorted()
        return VotingPlace(
            place: slaves.firstIndex(of: nodeIdentity.nodeId) ?? 0, votingSlaves: slaves.count,
            membersCommitted: engine.membersCommitted, master: trust.current?.master)
    }

    /// True when `place` was worked out before the members last committed or before this
    /// slave followed another master.
    private func placeIsStale(_ place: VotingPlace?) -> Bool {
        guard let place else { return true }
        return place.membersCommitted != engine.membersCommitted || place.master != trust.current?.master
    }

    private func logTooFewVoters(_ count: Int) {
        logger.error(
            "auto_failover.off",
            metadata: [
                "voters": "\(count)",
                "reason":
                    "automatic failover needs 3 or more voters: with 2, a lost link and a dead master look the same to each; use ordersync promote",
            ])
    }

    private func scheduleAutoFailoverTick() {
        autoFailover?.timer = loop.schedule(after: Self.autoFailoverTick) { [weak self] in self?.autoFailoverTick() }
    }

    /// The timer fired: counts what was heard, stands when the silence is long enough.
    private func autoFailoverTick() {
        guard var watch = autoFailover, !shuttingDown else { return }
        watch.timer = nil
        if linkState.isUp, let heard = linkState.link?.lastHeard { watch.policy.heard(atMillis: millis(heard)) }
        // The most current voter stands first: how current it is (Currency), then its place.
        // The place is worked out again while the master is heard, when the members were
        // committed or another master is followed (terminals paired later, a promotion): taken
        // once, two voters could hold the same place and split the vote, and after a promotion
        // no survivor might hold place 0. Once the master is silent it is kept.
        if watch.place == nil || (linkState.isUp && placeIsStale(watch.place)) { watch.place = votingPlace() ?? watch.place }
        let currency = AutoFailover.Currency(lastSeq: engine.lastSeq, masterSeq: engine.masterSeq, stableSeq: engine.stableSeq)
        let rank = AutoFailover.rank(
            currency: currency, placeAmongVoters: watch.place?.place ?? 0, votingSlaves: watch.place?.votingSlaves ?? 1)
        watch.policy.rerank(rank, seed: watch.seed)
        let action = watch.policy.tick(nowMillis: millis(loop.now))
        autoFailover = watch
        guard case .standForElection(let silent)? = action else {
            reconsiderRefusedCandidate()
            return scheduleAutoFailoverTick()
        }
        let voters = standbyVoters()
        guard voters.count >= AutoFailover.minimumVoters, voters[nodeIdentity.nodeId] != nil else {
            if !watch.loggedTooFewVoters {
                autoFailover?.loggedTooFewVoters = true
                logTooFewVoters(voters.count)
            }
            autoFailover?.policy.candidacyEnded(nowMillis: millis(loop.now))
            return scheduleAutoFailoverTick()
        }
        logger.warning(
            "auto_failover.standing",
            metadata: ["silent_ms": "\(silent)", "master.id": "\(trust.current?.master ?? "-")", "seq": "\(engine.lastSeq)"])
        let respond = LocalAPIResponder(send: { [weak self] status, body in self?.automaticCandidacyAnswered(status, body) })
        afterBatch { [weak self] in self?.startPromotion(PromoteRequest(force: false), respond, automatic: true) }
    }

    /// Pre-votes for the automatic candidate refused earlier once the master has been silent
    /// for the election timeout; forgets it after a candidacy's deadline (it withdrew by then).
    private func reconsiderRefusedCandidate() {
        guard let (service, at) = autoFailover?.refusedCandidate else { return }
        if millis(loop.now) - at > Candidacy.deadlineMillis + Candidacy.voteGraceMillis {
            autoFailover?.refusedCandidate = nil
            return
        }
        guard !masterHeardRecently() else { return }
        autoFailover?.refusedCandidate = nil
        logger.notice("election.prevote_reconsidered", metadata: ["service.name": "\(service.name)"])
        _ = considerTerm(service)
    }

    /// The automatic candidacy's answer. A refusal before the hand-over (this slave still runs)
    /// starts the watch again; once handed over, the role that follows reports for itself.
    private func automaticCandidacyAnswered(_ status: Int, _ body: [UInt8]) {
        logger.notice(
            "auto_failover.answer",
            metadata: ["status": "\(status)", "answer": "\(String(decoding: body.prefix(300), as: UTF8.self))"])
        guard status != 200, !shuttingDown, autoFailover?.policy.isStanding == true else { return }
        autoFailover?.policy.candidacyEnded(nowMillis: millis(loop.now))
        scheduleAutoFailoverTick()
    }

    /// True when this slave heard its master (a frame on its link, or the last time its watch
    /// counted) within the election timeout.
    private func masterHeardRecently() -> Bool {
        let timing = autoFailover?.policy.timing ?? .standard
        var heard = autoFailover?.policy.lastHeardMillis
        if linkState.isUp, let h = linkState.link?.lastHeard { heard = max(heard ?? 0, millis(h)) }
        guard let heard else { return false }
        return millis(loop.now) - heard < timing.electionTimeoutMillis
    }

    /// Whether to pre-vote for the automatic candidate `id` announced by `service`: only when
    /// this slave has not heard its master within the election timeout. A refusal is logged, and with
    /// `--auto-failover` the candidate is considered again on each tick.
    func grantsAutomaticPreVote(_ id: String, _ service: ResolvedService) -> Bool {
        guard masterHeardRecently() else { return true }
        if autoFailover?.refusedCandidate == nil {
            logger.notice(
                "election.prevote_refused",
                metadata: ["candidate": "\(id)", "reason": "an automatic candidate while this terminal still hears its master"])
        }
        autoFailover?.refusedCandidate = (service, millis(loop.now))
        return false
    }

    /// The watch as status shows it: nil without `--auto-failover`.
    func autoFailoverStatus() -> AutoFailoverStatus? {
        guard configuration.autoFailover else { return nil }
        guard let policy = autoFailover?.policy else {
            return AutoFailoverStatus(state: .off, leaseMillis: AutoFailoverTiming.standard.leaseMillis)
        }
        return AutoFailoverStatus(
            state: policy.isStanding ? .standing : .watching, leaseMillis: policy.timing.leaseMillis,
            silentMillis: policy.lastHeardMillis.map { millis(loop.now) - $0 }, standAfterMillis: policy.standAfterMillis)
    }
}
