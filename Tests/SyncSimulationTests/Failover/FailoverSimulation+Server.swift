@testable import SyncCore

/// What a master and a candidate do with what their peers send, and a candidacy's actions.
extension FailoverSimulation {
    func serverReceived(_ m: FailoverMessage, from peer: FailoverPeer, at s: FailoverNode) {
        let from = nodes[peer.node]
        switch (s.role, m) {
        case let (.master, .hello(_, history, term)):
            guard term <= s.term else {
                // A slave of a later term: this master is stale (design.md, stale_master).
                send(.staleMaster(term: term), on: peer.link, from: .master)
                closeServed(s, peer.link)
                stepDown(s, seen: term)
                return
            }
            s.served[peer.link.id]?.hello = (history, term)
            serve(s, peer.link, history)
        case let (.candidate, .hello(_, history, term)):
            s.served[peer.link.id]?.hello = (history, term)
            perform(s, s.candidacy?.preVote(from: from.id, lastSeq: history.lastSeq, lastTerm: history.lastTerm) ?? [])
        case (.master, .operation(let opId)):
            guard peer.live else { return }
            if let e = s.journal.first(where: { $0.opId == opId }) {
                acknowledge(s, opId: opId, term: s.term)
                send(.result(opId: opId, seq: e.seq), on: peer.link, from: .master)
                return
            }
            let e = append(s, opId: opId)
            acknowledge(s, opId: opId, term: s.term)
            send(.result(opId: opId, seq: e.seq), on: peer.link, from: .master)
        case (.master, .ack(let held)):
            s.served[peer.link.id]?.held = held
            answerLocalWrites(s)
        case (.candidate, .election(.vote(let v))):
            guard v.term == s.candidacy?.configuration.term else { return }
            let actions =
                v.granted
                ? s.candidacy?.voteGranted(from: from.id, lastSeq: v.position.lastSeq, lastTerm: v.position.lastTerm)
                : s.candidacy?.voteRefused(from: from.id, reason: v.reason ?? "", rival: v.rival)
            perform(s, actions ?? [])
        case (.candidate, .entry(let e)):
            guard s.fetchSource == peer.node else { return }
            if e.seq <= s.lastSeq, s.entry(at: e.seq) != e {
                // The voter's history differs from here: the candidate's own entries go back
                // to its outbox.
                stats.diverged += s.requeue(after: e.seq - 1)
            }
            if e.seq == s.lastSeq + 1 {
                s.journal.append(e)
                s.fetchedEntries += 1
            } else if e.seq > s.lastSeq + 1 {
                s.fetchSource = nil
                perform(s, s.candidacy?.fetchFailed() ?? [])
            }
        case (.candidate, .election(.fetched)):
            guard s.fetchSource == peer.node else { return }
            s.fetchSource = nil
            stats.fetches += 1
            perform(s, s.candidacy?.fetched(upTo: s.lastSeq, entries: s.fetchedEntries) ?? [])
        default:
            return
        }
    }

    /// A master serves a hello: `diverged` when the slave's tail is not its history, the
    /// entries it lacks, then `ready`.
    func serve(_ s: FailoverNode, _ c: SimConnection, _ history: TermHistory) {
        let k = shared(s, history)
        if k < history.lastSeq { send(.diverged(keep: k), on: c, from: .master) }
        for e in s.journal.dropFirst(Int(k)) { send(.entry(e), on: c, from: .master) }
        send(.ready(term: s.term), on: c, from: .master)
        s.served[c.id]?.live = true
        s.served[c.id]?.held = k
    }

    /// The master applies `opId` in its term and broadcasts it.
    @discardableResult
    func append(_ s: FailoverNode, opId: String) -> FailoverEntry {
        let e = FailoverEntry(seq: s.lastSeq + 1, term: s.term, opId: opId)
        s.journal.append(e)
        for id in s.served.keys.sorted() where s.served[id]?.live == true {
            if let p = s.served[id] { send(.entry(e), on: p.link, from: .master) }
        }
        return e
    }

    /// A master answers for `opId` in `term`.
    func acknowledge(_ s: FailoverNode, opId: String, term: Int64) {
        checker.masterAcknowledged(self, node: s, term: term, opId: opId)
    }

    /// A write through the master's own local API: answered once a standby holds it, or
    /// unreplicated at once when none is connected or after 2 s.
    func masterWrite(_ s: FailoverNode) {
        s.writes += 1
        let opId = "\(s.tag)-api-\(s.writes)"
        let e = append(s, opId: opId)
        stats.writes += 1
        if !s.served.values.contains(where: \.live) {
            answerUnreplicated(s, opId: opId, term: e.term)
            return
        }
        s.pendingLocal.append((opId, e.seq, e.term))
        let inc = s.incarnation
        clock.schedule(after: 2000) { [unowned self] in
            guard s.incarnation == inc, s.role == .master, let i = s.pendingLocal.firstIndex(where: { $0.opId == opId }) else { return }
            s.pendingLocal.remove(at: i)
            self.answerUnreplicated(s, opId: opId, term: e.term)
        }
    }

    private func answerUnreplicated(_ s: FailoverNode, opId: String, term: Int64) {
        stats.unreplicated += 1
        acknowledge(s, opId: opId, term: term)
        checker.acknowledged(opId, by: s, replicated: false)
    }

    /// Answers the local writes some live standby holds.
    func answerLocalWrites(_ s: FailoverNode) {
        let held = s.served.values.filter(\.live).map(\.held).max() ?? 0
        while let w = s.pendingLocal.first, w.seq <= held {
            s.pendingLocal.removeFirst()
            stats.replicated += 1
            acknowledge(s, opId: w.opId, term: w.term)
            checker.acknowledged(w.opId, by: s, replicated: true)
        }
    }

    /// A master that saw a later term stops taking writes and plays slave (design.md,
    /// step-down); the new master's `diverged` puts its tail back in its outbox.
    func stepDown(_ s: FailoverNode, seen term: Int64) {
        guard s.role == .master else { return }
        trace.add(clock.now, s.tag, "steps down", "term \(s.term) saw \(term)")
        stats.stepDowns += 1
        for p in s.servedPeers { network.closeGracefully(p.link, by: .master) }
        s.served = [:]
        s.pendingLocal = []
        s.role = .slave
        s.wasMaster = false
        s.followed = nil
    }

    // MARK: Candidacy

    /// The operator promotes `n` (`ordersync promote`). `blind`: at the same moment as another
    /// promotion, before either saw the other's announcement. Each bids a term it owns
    /// (`TermBallot`, its member number the node's index + 1), so even blind bids differ; the
    /// `grantEveryPromise` mutation bids the `+1` term of earlier versions instead.
    func promote(_ n: FailoverNode, force: Bool, blind: Bool = false) {
        guard n.role == .slave else { return }
        let seen =
            nodes.filter {
                $0.isUp && $0.isolatedUntil <= clock.now && ($0.role == .master || (!blind && $0.role == .candidate))
            }
            .map(\.announcedTerm).max() ?? 1
        let known = max(n.term, seen)
        let term = config.mutation == .grantEveryPromise ? known + 1 : TermBallot.bid(number: n.memberNumber, above: known)
        dropLink(n)
        n.role = .candidate
        n.candidacy = Candidacy(
            .init(term: term, nodeId: n.id, name: n.name, position: n.position, isVoter: n.isVoter, voters: voters, force: force))
        stats.promotions += 1
        if force { stats.forcedRequests += 1 }
        trace.add(clock.now, n.tag, "promote", "term \(term) force=\(force) at \(n.position)")
        perform(n, n.candidacy?.start() ?? [])
    }

    /// Carries out a candidacy's actions.
    func perform(_ n: FailoverNode, _ actions: [Candidacy.Action]) {
        for a in actions {
            guard n.role == .candidate, let candidacy = n.candidacy else { return }
            switch a {
            case .persistOwnVote(let v):
                n.term = v.term
                n.vote = v
                n.followed = nil
            case .sendPromise(let id):
                if let p = n.peer(id: id, in: nodes) {
                    send(.election(.promise(term: candidacy.configuration.term)), on: p.link, from: .master)
                }
            case let .fetch(id, after):
                guard let p = n.peer(id: id, in: nodes) else { continue }
                if config.mutation == .skipFetch {
                    perform(n, n.candidacy?.fetched(upTo: n.lastSeq) ?? [])
                    return
                }
                n.fetchSource = p.node
                n.fetchedEntries = 0
                send(.election(.fetch(after: after, termStarts: n.history.starts)), on: p.link, from: .master)
            case .armDeadline(let millis):
                n.deadlineGeneration += 1
                let generation = n.deadlineGeneration
                let inc = n.incarnation
                clock.schedule(after: millis) { [unowned self] in
                    guard n.incarnation == inc, n.deadlineGeneration == generation, n.role == .candidate else { return }
                    self.perform(n, n.candidacy?.deadlinePassed() ?? [])
                }
            case .forced(let unreachable):
                stats.forced += 1
                trace.add(clock.now, n.tag, "promote.forced", "unreachable \(unreachable)")
            case .becomeMaster(let report):
                becomeMaster(n, report)
            case .withdraw(let report):
                stats.withdrawals += 1
                trace.add(clock.now, n.tag, "withdraws", "\(report.refusal?.code.rawValue ?? "?"): \(report.refusal?.message ?? "")")
                n.candidacy = nil
                n.fetchSource = nil
                n.role = .slave
                for p in n.servedPeers { network.closeGracefully(p.link, by: .master) }
                n.served = [:]
                lastRefusal = report.refusal?.code
            }
        }
    }

    private func becomeMaster(_ n: FailoverNode, _ report: PromotionReport) {
        let term = n.candidacy?.configuration.term ?? n.term
        n.term = term
        n.termStarts[term] = n.lastSeq + 1
        n.candidacy = nil
        n.fetchSource = nil
        n.role = .master
        n.wasMaster = true
        n.followed = n.id
        // What its own POS app wrote while it was a slave is applied now, once.
        for opId in n.outbox where !n.journal.contains(where: { $0.opId == opId }) {
            append(n, opId: opId)
        }
        for opId in n.outbox { acknowledge(n, opId: opId, term: term) }
        n.outbox = []
        stats.promoted += 1
        if report.forced { stats.forcedPromotions += 1 }
        trace.add(clock.now, n.tag, "master", "term \(term) seq \(n.lastSeq) promised \(report.promised)")
        checker.becameMaster(self, node: n, term: term)
        // Step 5: no voter that promised it is ahead of the new master (term first, then seq);
        // a voter's entries of a term the new master's history does not hold go back to its
        // outbox when it says hello.
        for v in nodes where v !== n && report.promised.contains(v.name) && v.position > n.position && !report.forced {
            checker.fail(self, "promoted behind a voter", "\(n.tag) (term \(term)) at \(n.position), \(v.tag) at \(v.position)")
        }
        for id in n.served.keys.sorted() {
            guard let p = n.served[id], let h = p.hello else { continue }
            if h.term > term {
                closeServed(n, p.link)
                continue
            }
            serve(n, p.link, h.history)
        }
    }
}
