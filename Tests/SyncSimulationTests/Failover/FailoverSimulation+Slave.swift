@testable import SyncCore

/// What a slave does: browse and follow (`FollowPolicy`), apply broadcasts, answer promises and
/// fetches; the POS writes; the operator who promotes.
extension FailoverSimulation {
    func slaveReceived(_ m: FailoverMessage, on c: SimConnection, at n: FailoverNode) {
        guard n.role == .slave else { return }
        switch m {
        case .entry(let e):
            if e.seq == n.lastSeq + 1 {
                n.journal.append(e)
                send(.ack(held: n.lastSeq), on: c, from: .slave)
            } else if e.seq > n.lastSeq + 1 {
                trace.add(clock.now, n.tag, "gap", "at \(e.seq), last \(n.lastSeq)")
                dropLink(n)
            }
        case let .result(opId, _):
            n.outbox.removeAll { $0 == opId }
        case .diverged(let keep):
            divergedTail(n, keep: keep)
        case .ready(let term):
            n.linkReady = true
            if term > n.term { n.term = term }
            if let t = n.linkTarget { n.followed = nodes[t].id }
            for opId in n.outbox { send(.operation(opId: opId), on: c, from: .slave) }
        case .staleMaster:
            dropLink(n)
        case .election(.promise(let term)):
            guard let t = n.linkTarget else { return }
            var answer = policy(n).grant(promise: term, from: nodes[t].id)
            if config.mutation == .grantEveryPromise, term >= n.term {
                answer = .granted(persist: TermVote(term: term, nodeId: nodes[t].id))
            }
            switch answer {
            case .granted(let vote):
                if let v = vote {
                    if v.term > n.term { n.followed = nil }
                    n.term = max(n.term, v.term)
                    n.vote = v
                }
                send(.election(.vote(.init(term: term, granted: true, position: n.position))), on: c, from: .slave)
            case .refused(let reason):
                let rival = policy(n).rival(against: term, from: nodes[t].id)
                let vote = ElectionMessage.Vote(term: term, granted: false, position: n.position, reason: reason, rival: rival)
                send(.election(.vote(vote)), on: c, from: .slave)
            }
        case let .election(.fetch(after, termStarts)):
            let k = shared(n, TermHistory(starts: termStarts, lastSeq: after))
            for e in n.journal.dropFirst(Int(k)) { send(.entry(e), on: c, from: .slave) }
            send(.election(.fetched(seq: n.lastSeq)), on: c, from: .slave)
        default:
            return
        }
    }

    /// `diverged`: the entries after `keep` go back into the outbox (skipping one already there),
    /// and leave the journal, in one step.
    private func divergedTail(_ n: FailoverNode, keep: Int64) {
        let tail = n.journal.dropFirst(Int(keep))
        trace.add(clock.now, n.tag, "sync.diverged", "keep \(keep), \(tail.count) entries back to the outbox")
        stats.diverged += tail.count
        if config.mutation == .dropDivergedTail {
            n.journal.removeLast(tail.count)
        } else {
            n.requeue(after: keep)
        }
    }

    /// What the slave holds, for `FollowPolicy`.
    func policy(_ n: FailoverNode) -> FollowPolicy {
        FollowPolicy(nodeId: n.id, term: n.term, vote: n.vote, members: members, followedMaster: n.followed)
    }

    func scheduleBrowse(_ n: FailoverNode, after: Int64) {
        let inc = n.incarnation
        clock.schedule(after: after) { [unowned self] in
            guard n.incarnation == inc, n.isUp else { return }
            self.browse(n)
            self.scheduleBrowse(n, after: self.rng.int(Int64(300)...800))
        }
    }

    /// What `n` sees on the LAN, and what it does about it.
    private func browse(_ n: FailoverNode) {
        let seen = announcements(seenBy: n)
        switch n.role {
        case .master:
            // A member announcing a later term as master: step down.
            if let later = seen.first(where: { $0.node != nil && $0.announcement.role == .master && $0.announcement.term > n.term }) {
                stepDown(n, seen: later.announcement.term)
            }
        case .slave:
            for (node, announcement) in seen {
                var decision = policy(n).decide(announcement)
                if config.mutation == .grantEveryPromise, node != nil, announcement.role == .candidate, announcement.term >= n.term {
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
                    if let t = persistTerm, t > n.term {
                        n.term = t
                        n.followed = nil
                    }
                    if n.linkTarget != target.index { connect(n, to: target) }
                }
                return
            }
        case .candidate, .down, .gone:
            return
        }
    }

    // MARK: Workload and operator

    func writeTick() {
        guard faultsOn else { return }
        let up = nodes.filter { $0.role == .slave || $0.role == .master }
        if let n = up.randomElement(using: rng) {
            if n.role == .master {
                masterWrite(n)
            } else {
                n.writes += 1
                let opId = "\(n.tag)-pos-\(n.writes)"
                n.outbox.append(opId)
                stats.writes += 1
                checker.acknowledged(opId, by: n, replicated: true)
                if n.linkReady, let c = n.link { send(.operation(opId: opId), on: c, from: .slave) }
            }
        }
        clock.schedule(after: rng.int(Int64(50)...600)) { [unowned self] in self.writeTick() }
    }

    /// The operator: when no master of the highest term is on the LAN (the master is gone, or
    /// some tills promised a candidate that withdrew and follow nobody) and no promotion runs,
    /// promotes a slave (at random, sometimes the least current one; now and then two at once;
    /// with `--force` after a `no_majority` refusal when the master is gone for good).
    func operatorTick() {
        defer { clock.schedule(after: rng.int(Int64(1500)...5000)) { [unowned self] in self.operatorTick() } }
        // One operator: no new promotion while one runs, even on a till cut off from the others.
        // Two at once (below), forced too, never share a term: terms are ballots (TermBallot).
        guard !nodes.contains(where: { $0.role == .candidate }) else { return }
        let visible = nodes.filter { $0.isUp && $0.isolatedUntil <= clock.now }
        let highest = visible.map(\.term).max() ?? 1
        guard !visible.contains(where: { $0.role == .master && $0.term >= highest }) else { return }
        let slaves = visible.filter { $0.role == .slave }
        guard !slaves.isEmpty else { return }
        let pick = rng.chance(0.3) ? slaves.min { $0.position < $1.position }! : rng.pick(slaves)
        let force = lastRefusal == .noMajority && masterDiesForGood && rng.chance(0.6)
        lastRefusal = nil
        promote(pick, force: force)
        if slaves.count > 1, rng.chance(0.15) {
            let other = rng.pick(slaves.filter { $0 !== pick })
            stats.twoAtOnce += 1
            clock.schedule(after: rng.int(Int64(0)...200)) { [unowned self] in self.promote(other, force: force, blind: true) }
        }
    }
}
