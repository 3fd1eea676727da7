import OrderStore

@testable import SyncCore

/// What happens on the LAN around the engines: the POS apps' writes (a slave's through its
/// engine's outbox, the master's local API waiting for a standby through the real
/// `ReplicationWaits`), browsing and following (`FollowPolicy`), and the operator who promotes.
extension EngineFailoverSimulation {
    func writeTick() {
        guard faultsOn else { return }
        let up = nodes.filter { $0.slave != nil || $0.master != nil }
        if let n = up.randomElement(using: rng) {
            stats.writes += 1
            let message = makeMessage { [n] key in try? n.db?.order(uuid: key) }
            if let e = n.master {
                masterWrite(n, e, message)
            } else if let e = n.slave {
                let opId = rng.uuid()
                let (result, actions) = e.localWrite(message, opId: opId, now: clock.now)
                trace.add(clock.now, n.tag, "write", "op \(opId) \(message.operation) changes \(result.changes.count)")
                if result.failure == nil, !result.changes.isEmpty {
                    stats.slaveAcknowledged += 1
                    checker.acknowledged(opId, by: n, replicated: true)
                }
                performSlave(n, actions)
            }
        }
        clock.schedule(after: rng.int(Int64(50)...600)) { [unowned self] in self.writeTick() }
    }

    /// A write through the master's local API: committed, then answered once a standby holds it
    /// (`ackNow` asks the standbys to say so at once), or unreplicated when none is connected
    /// or after `syncTimeoutMillis`.
    private func masterWrite(_ n: EngineFailoverNode, _ e: MasterEngine, _ base: OperationMessage) {
        var message = base
        message.opId = rng.uuid()
        let opId = message.opId!
        let (outcome, actions) = e.localWrite(message, origin: "\(n.name) (local API)", now: clock.now, ackNow: true)
        trace.add(clock.now, n.tag, "write", "op \(opId) \(message.operation) seq \(outcome.seq.map(String.init) ?? "nil")")
        performMaster(n, actions)
        guard let seq = outcome.seq, !outcome.isRepeat else { return }
        checker.applied(opId, seq: seq, term: e.terms.term)
        let deadline = clock.now + Self.syncTimeoutMillis
        if let done = n.waits.add(seq: seq, replicas: 1, standbys: e.standbys, deadline: deadline, answer: opId) {
            answerMasterWrite(n, done.answer, term: e.terms.term, replicated: done.replicated)
            return
        }
        let inc = n.incarnation
        clock.schedule(at: deadline) { [unowned self] in
            guard n.incarnation == inc, let e = n.master else { return }
            for w in n.waits.expired(now: self.clock.now) { self.answerMasterWrite(n, w.answer, term: e.terms.term, replicated: false) }
        }
    }

    /// The master's writes its standbys now hold enough of are answered.
    func answerReplicatedWrites(_ n: EngineFailoverNode) {
        guard let e = n.master, n.waits.count > 0 else { return }
        for w in n.waits.heard(e.standbys) { answerMasterWrite(n, w.answer, term: e.terms.term, replicated: true) }
    }

    /// The master's local API answers `opId` (`"replicated": false` when no standby held it).
    func answerMasterWrite(_ n: EngineFailoverNode, _ opId: String, term: Int64, replicated: Bool) {
        if replicated { stats.replicated += 1 } else { stats.unreplicated += 1 }
        trace.add(clock.now, n.tag, "answered", "op \(opId) replicated=\(replicated)")
        checker.claim(self, term: term, by: n, "acknowledged \(opId)")
        checker.acknowledged(opId, by: n, replicated: replicated)
    }

    // MARK: Browsing

    func scheduleBrowse(_ n: EngineFailoverNode, after: Int64) {
        let inc = n.incarnation
        clock.schedule(after: after) { [unowned self] in
            guard n.incarnation == inc, n.isUp else { return }
            self.browse(n)
            guard n.incarnation == inc else { return }
            self.scheduleBrowse(n, after: self.rng.int(Int64(300)...800))
        }
    }

    /// What `n` sees on the LAN, and what it does about it.
    private func browse(_ n: EngineFailoverNode) {
        let seen = announcements(seenBy: n)
        if let e = n.master {
            considerStepDown(n, e, seen)
            return
        }
        guard n.slave != nil else { return }
        for (node, announcement) in seen {
            var decision = policy(n).decide(announcement)
            if config.mutation == .grantEveryPromise, node != nil, announcement.role == .candidate, announcement.term >= n.storedTerm {
                decision = .preVote
            }
            guard let target = node else {
                if case .ignore(.notAMember) = decision {
                    stats.rogueIgnored += 1
                } else {
                    checker.fail(self, "trust", "\(n.tag) would follow the rogue: \(decision)")
                }
                continue
            }
            switch decision {
            case .ignore: continue
            case .preVote:
                if n.linkTarget != target.index { connect(n, to: target) }
            case .follow(let persistTerm):
                if let t = persistTerm, t > n.storedTerm {
                    do { try n.db?.setTerm(t) } catch {
                        return checker.fail(self, "store", "\(n.tag) could not persist term \(t): \(error)")
                    }
                    n.followed = nil
                }
                if n.linkTarget != target.index { connect(n, to: target) }
            }
            return
        }
    }

    // MARK: The operator

    /// When no master of the highest term is on the LAN and no promotion runs, the operator
    /// promotes a slave (at random, the least current one in 30 %; in 15 % a second one at the
    /// same moment; with `--force` after a `no_majority` refusal when every master is gone for
    /// good).
    func operatorTick() {
        defer { clock.schedule(after: rng.int(Int64(1500)...5000)) { [unowned self] in self.operatorTick() } }
        guard faultsOn || !settled() else { return }
        guard !nodes.contains(where: { $0.candidate != nil }) else { return }
        let visible = nodes.filter { $0.isUp && $0.isolatedUntil <= clock.now }
        let highest = visible.map(\.announcedTerm).max() ?? 1
        guard !visible.contains(where: { $0.master != nil && $0.announcedTerm >= highest }) else { return }
        let slaves = visible.filter { $0.slave?.epoch != nil }
        guard !slaves.isEmpty else { return }
        let pick = rng.chance(0.3) ? slaves.min { $0.position < $1.position }! : rng.pick(slaves)
        // `--force` attests that the master is gone for good: only once the original master died
        // and no other store that played master is left (not one crashed or cut off).
        let masterGone = !nodes.contains { (try? $0.db?.metadata("node.role")) == "master" }
        let force = lastRefusal == .noMajority && masterDiesForGood && masterGone && rng.chance(0.6)
        lastRefusal = nil
        promote(pick, force: force)
        if !force, slaves.count > 1, rng.chance(0.15) {
            let other = rng.pick(slaves.filter { $0 !== pick })
            stats.twoAtOnce += 1
            clock.schedule(after: rng.int(Int64(0)...200)) { [unowned self] in self.promote(other, force: false, blind: true) }
        }
    }

    /// A master that sees a member announce a later term (a master or a candidate) steps down
    /// as `MasterNode.considerStepDown` decides: once it has seen it for 3 s, unless a majority of
    /// the voters, itself included, is still connected to it (no promotion can have won then).
    private func considerStepDown(
        _ n: EngineFailoverNode, _ e: MasterEngine, _ seen: [(node: EngineFailoverNode?, announcement: FollowPolicy.Announcement)]
    ) {
        guard let later = seen.first(where: { $0.node != nil && $0.announcement.term > e.terms.term }) else {
            n.laterTermSeenAt = nil
            return
        }
        guard let since = n.laterTermSeenAt else {
            n.laterTermSeenAt = clock.now
            return
        }
        guard clock.now - since >= 3000 else { return }
        if voters.count > 1, e.standbys.filter(\.voter).count + 1 >= voters.count / 2 + 1 { return }
        stepDown(n, seen: later.announcement.term)
    }
}
