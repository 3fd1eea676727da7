import JSON
import OrderStore

@testable import SyncCore

/// Promotions the node's way (`SlaveNode+Promotion`, `MasterNode+Candidacy`, `MasterNode+Election`,
/// `SlaveNode+Voting`, `MasterNode+StepDown`), on the real store code: the candidate's own vote,
/// the voters' promises, the fetched tail (`applyFetchedEntries`), the term committed
/// (`becomeMasterFromStandby`), the own outbox applied, and an old master stepping down.
extension EngineFailoverSimulation {
    /// The operator promotes `n` (`ordersync promote`). `blind`: at the same moment as another
    /// promotion, before either saw the other's announcement.
    func promote(_ n: EngineFailoverNode, force: Bool, blind: Bool = false) {
        guard let e = n.slave, let lineage = e.epoch else { return }
        let seen =
            nodes.filter {
                $0.isUp && $0.isolatedUntil <= clock.now && ($0.master != nil || (!blind && $0.candidate != nil))
            }
            .map(\.announcedTerm).max() ?? 1
        // Its own ballot (`TermBallot`, Docs/PROTOCOL.md 7.16), as `SlaveNode+Promotion` bids;
        // the `grantEveryPromise` mutation bids the `+1` term of earlier versions instead.
        let known = max(n.storedTerm, seen)
        let term = config.mutation == .grantEveryPromise ? known + 1 : TermBallot.bid(number: n.memberNumber, above: known)
        dropLink(n)
        let position = n.position
        let candidate = EngineCandidate(
            .init(term: term, nodeId: n.id, name: n.name, position: position, isVoter: n.isVoter, voters: voters, force: force),
            storeId: storeId, lineage: lineage)
        n.role = .candidate(candidate)
        n.incarnation += 1
        stats.promotions += 1
        trace.add(clock.now, n.tag, "promote", "term \(term) force=\(force) at \(position)")
        perform(n, candidate, candidate.election.start())
    }

    /// What a candidate receives: election messages go to the `Candidacy`, the entries of the
    /// tail being fetched are collected, everything else is held (a voter's hello is its pre-vote).
    func candidateReceived(
        _ text: String, from peer: EngineFailoverNode, on c: SimConnection, _ cand: EngineCandidate, at s: EngineFailoverNode
    ) {
        let bytes = Array(text.utf8)
        if let decoded = ElectionMessage.decode(bytes) {
            switch decoded {
            case .success(.vote(let v)) where v.term == cand.term:
                let p = v.position
                perform(
                    s, cand,
                    v.granted
                        ? cand.election.voteGranted(from: peer.id, lastSeq: p.lastSeq, lastTerm: p.lastTerm)
                        : cand.election.voteRefused(from: peer.id, reason: v.reason ?? "refused"))
            case .success(.fetched) where ElectionMessage.isTailUnavailable(bytes):
                guard cand.fetching?.voter == peer.index else { return }
                cand.fetching = nil
                perform(s, cand, cand.election.tailUnavailable())
            case .success(.fetched(let seq)):
                fetchedTail(s, cand, from: peer, upTo: seq)
            default:
                break
            }
            return
        }
        if cand.fetching?.voter == peer.index, let entry = Self.fetchedEntry(bytes, now: clock.now) {
            cand.fetching?.entries.append(entry)
            return
        }
        cand.held.append((c.id, text))
        if let o = try? JSONParser.parse(bytes).objectValue, o["type"]?.stringValue == "hello" {
            perform(
                s, cand, cand.election.preVote(from: peer.id, lastSeq: o["lastSeq"]?.intValue ?? 0, lastTerm: o["lastTerm"]?.intValue ?? 1))
        }
    }

    /// A journal entry as a voter sends it in a fetch (its broadcast bytes, with seq and term),
    /// read as `MasterNode.fetchedEntry` reads it; nil for anything else.
    static func fetchedEntry(_ bytes: [UInt8], now: Int64) -> JournalEntry? {
        guard case .success(.applied(let op, let orders, let seq?, let opId, let origin, nil, _)) = ServerMessage.decode(bytes),
            let object = try? JSONParser.parse(bytes).objectValue
        else { return nil }
        return JournalEntry(
            seq: seq, term: object["term"]?.intValue ?? 1, opId: opId, origin: origin ?? "", operation: op,
            orderUUIDs: orders.map(\.uuid), message: bytes, recordedAtMillis: now)
    }

    /// The voter sent its tail up to `seq`: applied in one commit, then the election goes on.
    private func fetchedTail(_ s: EngineFailoverNode, _ cand: EngineCandidate, from voter: EngineFailoverNode, upTo seq: Int64) {
        guard let fetch = cand.fetching, fetch.voter == voter.index, let db = s.db else { return }
        cand.fetching = nil
        do {
            let applied = try db.applyFetchedEntries(fetch.entries, atMillis: clock.now)
            stats.fetches += 1
            stats.fetchedEntries += applied
            trace.add(clock.now, s.tag, "fetched", "\(applied) entries from \(voter.tag) up to \(seq)")
            perform(s, cand, cand.election.fetched(upTo: seq, entries: applied))
        } catch {
            trace.add(clock.now, s.tag, "fetch failed", "\(error)")
            perform(s, cand, cand.election.fetchFailed())
        }
    }

    /// Carries out a candidacy's actions, in order.
    func perform(_ n: EngineFailoverNode, _ cand: EngineCandidate, _ actions: [Candidacy.Action]) {
        for a in actions {
            guard n.candidate === cand, let db = n.db else { return }
            switch a {
            case .persistOwnVote(let v):
                do {
                    try db.transaction {
                        try db.setTerm(v.term)
                        try db.setVote(term: v.term, nodeId: v.nodeId)
                    }
                } catch {
                    return checker.fail(self, "store", "\(n.tag) could not persist its vote: \(error)")
                }
            case .sendPromise(let id):
                if let voter = nodes.first(where: { $0.id == id }), let p = n.peer(node: voter.index) {
                    network.send(
                        String(decoding: ElectionMessage.promise(term: cand.term).encodedBytes(), as: UTF8.self), on: p.link, from: .master)
                }
            case .fetch(let id, let after):
                guard let voter = nodes.first(where: { $0.id == id }), let p = n.peer(node: voter.index),
                    let starts = try? db.termStarts()
                else {
                    perform(n, cand, cand.election.fetchFailed())
                    return
                }
                if config.mutation == .skipFetch {
                    perform(n, cand, cand.election.fetched(upTo: n.position.lastSeq, entries: 0))
                    return
                }
                cand.fetching = (voter.index, [])
                let text = String(decoding: ElectionMessage.fetch(after: after, termStarts: starts.starts).encodedBytes(), as: UTF8.self)
                network.send(text, on: p.link, from: .master)
            case .armDeadline(let millis):
                cand.deadlineGeneration += 1
                let generation = cand.deadlineGeneration
                clock.schedule(after: millis) { [unowned self] in
                    guard n.candidate === cand, cand.deadlineGeneration == generation else { return }
                    self.perform(n, cand, cand.election.deadlinePassed())
                }
            case .forced(let unreachable):
                trace.add(clock.now, n.tag, "promote.forced", "unreachable \(unreachable)")
            case .becomeMaster(let report):
                becomeMaster(n, cand, report)
            case .withdraw(let report):
                stats.withdrawals += 1
                trace.add(clock.now, n.tag, "withdraws", "\(report.refusal?.code.rawValue ?? "?"): \(report.refusal?.message ?? "")")
                lastRefusal = report.refusal?.code
                for p in n.servedPeers { network.closeGracefully(p.link, by: .master) }
                n.served = [:]
                n.role = .down
                start(n)
            }
        }
    }

    /// Won: the term committed the node's way, a real master engine on the store, the own
    /// outbox applied, then the held messages served in order.
    private func becomeMaster(_ n: EngineFailoverNode, _ cand: EngineCandidate, _ report: PromotionReport) {
        guard let db = n.db else { return }
        let engine: MasterEngine
        do {
            try db.transaction {
                try db.setMetadata("node.role", "master")
                try db.setMetadata("store.id", cand.storeId)
                try db.setVote(term: cand.term, nodeId: n.id)
                try db.becomeMasterFromStandby(
                    term: cand.term, lineage: cand.lineage, oldMaster: try db.standbyMaster(), atMillis: clock.now)
            }
            engine = try MasterEngine(store: SQLiteMasterStore(db: db), storeId: cand.storeId, epoch: cand.lineage)
        } catch {
            return checker.fail(self, "store", "\(n.tag) could not commit its promotion: \(error)")
        }
        engine.snapshotChunk = 5
        engine.maxCatchUpEntries = catchUpBound
        n.role = .master(engine)
        n.incarnation += 1
        n.followed = n.id
        stats.promoted += 1
        if report.forced { stats.forcedPromotions += 1 }
        let position = n.position
        trace.add(clock.now, n.tag, "master", "term \(cand.term) at \(position) promised \(report.promised) forced=\(report.forced)")
        checker.claim(self, term: cand.term, by: n, "became master")
        // No voter that promised it is ahead of it (term first, then seq), unless forced.
        for v in nodes where v !== n && v.isUp && report.promised.contains(v.name) && !report.forced && v.position > position {
            checker.fail(self, "promoted behind a voter", "\(n.tag) (term \(cand.term)) at \(position), \(v.tag) at \(v.position)")
        }
        applyOwnOutbox(n, engine)
        membersChanged(n)
        scheduleHeartbeat(n)
        scheduleBrowse(n, after: rng.int(Int64(300)...800))
        for p in n.servedPeers {
            performMaster(
                n, engine.peerConnected(p.link.id, address: "10.0.0.\(p.node + 10):\(40000 + p.link.id)", terminal: terminal(nodes[p.node]))
            )
        }
        for (link, text) in cand.held where n.served[link] != nil {
            guard let e = n.master else { return }
            performMaster(n, e.received(Array(text.utf8), from: link, now: clock.now))
        }
        answerReplicatedWrites(n)
    }

    /// What its POS app wrote as a slave becomes the master's own writes, in one transaction, as
    /// `MasterNode.applyOwnOutbox` does: the orders put back where the history left them
    /// (`restoreOwnOutboxBase`), each entry applied by `ownOutboxWrite`, its answer kept and the
    /// entry taken out of the outbox.
    private func applyOwnOutbox(_ n: EngineFailoverNode, _ engine: MasterEngine) {
        guard let db = n.db else { return }
        var actions: [MasterEngine.Action] = []
        do {
            let entries = try db.outboxEntries()
            guard !entries.isEmpty else { return }
            try db.transaction {
                let unknown = try db.restoreOwnOutboxBase(entries)
                for entry in entries {
                    guard case .success(.operation(let message)) = ClientMessage.decode(entry.message) else { continue }
                    let keys = entry.orderKeys.map { $0.lowercased() }
                    let (outcome, out) = engine.ownOutboxWrite(
                        message, keys: keys, asStored: keys.contains(where: unknown.contains), origin: "\(n.name) (local API)",
                        now: clock.now)
                    actions += out
                    if outcome.errors.contains(where: { $0.code == .storageFailed }) { continue }
                    try db.saveAPIAnswer(opId: entry.opId, status: outcome.seq == nil ? 409 : 200, body: "{}", atMillis: clock.now)
                    try db.deleteOutbox(opId: entry.opId)
                    if outcome.seq != nil, let j = try db.journalEntry(opId: entry.opId) {
                        checker.applied(entry.opId, seq: j.seq, term: j.term)
                    } else if outcome.seq == nil {
                        checker.answeredUnapplied(entry.opId)
                    }
                    stats.ownOutboxApplied += 1
                }
            }
        } catch {
            return checker.fail(self, "store", "\(n.tag) could not apply its own outbox: \(error)")
        }
        performMaster(n, actions)
    }

    /// A master that sees a member announce a later term stops taking writes and plays slave on
    /// the same store, as `MasterNode.stepDown` does: the store becomes a replica of its journal
    /// (the new master's `diverged` then re-queues its tail); writes waiting for a standby are
    /// answered unreplicated.
    func stepDown(_ n: EngineFailoverNode, seen term: Int64) {
        guard let e = n.master, let db = n.db else { return }
        trace.add(clock.now, n.tag, "steps down", "term \(e.terms.term) saw \(term) at \(n.position)")
        stats.stepDowns += 1
        for w in n.waits.drain() { answerMasterWrite(n, w.answer, term: e.terms.term, replicated: false) }
        for p in n.servedPeers { network.closeGracefully(p.link, by: .master) }
        n.served = [:]
        do {
            try db.transaction {
                try db.setMetadata("node.role", "slave")
                try db.becomeReplicaOfOwnJournal(lineage: e.epoch, store: storeId, term: e.terms.term)
            }
        } catch {
            return checker.fail(self, "store", "\(n.tag) could not step down: \(error)")
        }
        n.role = .down
        start(n)
    }

    // MARK: The voter's side

    /// An election message from the node this slave is linked to (`SlaveNode.electionMessage`).
    func voterReceived(_ bytes: [UInt8], on c: SimConnection, at n: EngineFailoverNode) {
        guard let db = n.db, let t = n.linkTarget else { return }
        let candidate = nodes[t]
        switch ElectionMessage.decode(bytes) {
        case .success(.promise(let term)):
            let position = n.position
            var answer = policy(n).grant(promise: term, from: candidate.id)
            if config.mutation == .grantEveryPromise, term >= n.storedTerm {
                answer = .granted(persist: TermVote(term: term, nodeId: candidate.id))
            }
            let vote: ElectionMessage.Vote
            switch answer {
            case .refused(let reason):
                vote = .init(term: term, granted: false, position: position, reason: reason)
            case .granted(let persist):
                if let v = persist {
                    do {
                        try db.transaction {
                            try db.setTerm(v.term)
                            try db.setVote(term: v.term, nodeId: v.nodeId)
                        }
                    } catch {
                        return checker.fail(self, "store", "\(n.tag) could not persist its vote: \(error)")
                    }
                    if v.term > (n.slave?.term ?? 1) { n.followed = nil }
                }
                vote = .init(term: term, granted: true, position: position)
            }
            network.send(String(decoding: ElectionMessage.vote(vote).encodedBytes(), as: UTF8.self), on: c, from: .slave)
        case .success(.fetch(let after, let termStarts)):
            sendTail(n, db, after: after, termStarts: TermStarts(termStarts), on: c)
        default:
            return
        }
    }

    /// Answers a candidate's fetch as `SlaveNode.sendTail` does.
    private func sendTail(_ n: EngineFailoverNode, _ db: OrderDatabase, after: Int64, termStarts: TermStarts, on c: SimConnection) {
        do {
            let last = try db.standbyPosition().lastSeq
            let shared = try db.termStarts().sharedSeq(lastSeq: last, with: termStarts, otherLastSeq: after)
            let first = try db.firstJournalSeq() ?? last + 1
            if shared < last && first > shared + 1 {
                return network.send(String(decoding: ElectionMessage.tailUnavailable(shared: shared), as: UTF8.self), on: c, from: .slave)
            }
            let entries = try db.journalEntries(after: shared, limit: 100_000)
            for e in entries { network.send(String(decoding: e.message, as: UTF8.self), on: c, from: .slave) }
            let done = ElectionMessage.fetched(seq: entries.last?.seq ?? shared).encodedBytes()
            network.send(String(decoding: done, as: UTF8.self), on: c, from: .slave)
        } catch {
            checker.fail(self, "store", "\(n.tag) could not read its tail: \(error)")
        }
    }

    /// What the slave holds, for `FollowPolicy`.
    func policy(_ n: EngineFailoverNode) -> FollowPolicy {
        let vote = (try? n.db?.vote()).flatMap { $0 }.map { TermVote(term: $0.term, nodeId: $0.nodeId) }
        return FollowPolicy(
            nodeId: n.id, term: max(n.storedTerm, n.slave?.term ?? 1), vote: vote, members: members, followedMaster: n.followed)
    }
}
