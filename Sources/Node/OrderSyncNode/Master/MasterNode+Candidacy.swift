import Foundation
import Logging
import NodePolicy
import OrderStore
import SyncCore

/// The candidate phase of a promotion (Docs/PROTOCOL.md, "Promotion"): the slave that became
/// this master publishes `role=candidate` with its new term, refuses writes with `promoting`,
/// holds the terminals' messages (a voter's hello is its pre-vote), and carries out what the
/// election's `Candidacy` asks: its own vote committed before any promise, promises, the
/// deadline, the fetch of a tail it lacks. Once it wins it commits the term and becomes master
/// proper: `role=master`, the held messages served in order, `ordersync promote` answered.
/// When it loses it withdraws and plays slave again on the same seat.
extension MasterNode {
    /// The TXT members naming the term and the role (`term=T`, `role=candidate|master`).
    var termTXT: [(String, String)] {
        [("term", "\(term)"), ("role", candidacy == nil ? "master" : "candidate")] + (candidacy?.automatic == true ? [("auto", "1")] : [])
    }

    /// The term a store's `sync.term` value names (absent or unreadable: 1).
    static func storedTerm(_ raw: String?) -> Int64 {
        Int64(raw ?? "").flatMap { $0 >= 1 ? $0 : nil } ?? 1
    }

    /// Starts the candidate phase (from `start()`, when this master is a candidate): another
    /// `promote` is answered `promoting` meanwhile.
    func startCandidacy(_ c: MasterCandidacy) {
        api.promoteHandler = { _, respond in
            let refusal = PromoteRefusal(.promoting, message: "a promotion is already running on this node")
            respond(refusal.httpStatus, refusal.jsonValue)
        }
        logger.notice(
            "promote.started",
            metadata: [
                "term": "\(c.term)", "epoch": "\(c.lineage)", "forced": "\(c.forced)", "seq": "\(engine.lastSeq)",
                "voters": "\(c.election.configuration.voters.values.sorted().joined(separator: ","))",
            ])
        carryOut(c, c.election.start())
    }

    /// A write while the candidacy runs: answered `503 promoting`; false when master proper.
    func candidateRefusesWrite(_ respond: LocalAPIServer.Respond) -> Bool {
        guard candidacy != nil else { return false }
        respond(503, LocalAPIRoute.errorBody(code: "promoting", message: "this node is becoming the master; try again in a moment"))
        return true
    }

    /// Carries out the election's actions in order; a commit of its own vote holds back the
    /// ones after it until it is on disk.
    func carryOut(_ c: MasterCandidacy, _ actions: [Candidacy.Action]) {
        var rest = actions[...]
        while let action = rest.popFirst() {
            guard candidacy === c else { return }
            switch action {
            case .persistOwnVote(let vote):
                let after = Array(rest)
                storeWrite({ db in
                    try db.setTerm(vote.term)
                    try db.setVote(term: vote.term, nodeId: vote.nodeId)
                }) { [weak self] result in
                    guard let self, self.candidacy === c else { return }
                    if case .failure(let error) = result {
                        return self.withdraw(c, storageRefusal(c, error))
                    }
                    self.carryOut(c, after)
                }
                return
            case .sendPromise(let voter):
                if let s = voterSession(voter) { send(ElectionMessage.promise(term: c.term).encodedBytes(), to: s) }
            case .fetch(let voter, let after):
                // The voter finds the last entry both journals share by this node's term starts.
                guard let s = voterSession(voter), let starts = try? writer.read({ try $0.termStarts() }) else {
                    carryOut(c, c.election.fetchFailed() + Array(rest))
                    return
                }
                c.fetching = (voter, [])
                send(ElectionMessage.fetch(after: after, termStarts: starts.starts).encodedBytes(), to: s)
            case .armDeadline(let millis):
                if let t = c.deadline { loop.cancel(t) }
                c.deadline = loop.schedule(after: .milliseconds(millis)) { [weak self, weak c] in
                    guard let self, let c, self.candidacy === c else { return }
                    c.deadline = nil
                    self.carryOut(c, c.election.deadlinePassed())
                }
            case .forced(let unreachable):
                logger.error("promote.forced", metadata: ["term": "\(c.term)", "unreachable": "\(unreachable.joined(separator: ","))"])
            case .becomeMaster(let report):
                commitPromotion(c, report)
            case .withdraw(let report):
                withdraw(c, report)
            }
        }
    }

    /// The open link of the voter `id`, if any.
    func voterSession(_ id: String) -> TerminalSession? {
        sessions.values.first { $0.secure?.terminal?.nodeId == id && $0.phase != .ended }
    }

    /// A refusal for a store that failed during the promotion.
    private func storageRefusal(_ c: MasterCandidacy, _ error: any Error) -> PromotionReport {
        var report =
            c.election.outcome ?? PromotionReport(term: c.term, seq: engine.lastSeq, voters: [], promised: [], unreachable: [])
        report.refusal = .init(.noMajority, "the promotion could not be committed: \(error)")
        return report
    }

    /// Won: commits the term (with the vote, the term start, the lineage, the old master among
    /// the paired terminals, the master role) and becomes master proper.
    private func commitPromotion(_ c: MasterCandidacy, _ report: PromotionReport) {
        if let t = c.deadline { loop.cancel(t) }
        c.deadline = nil
        c.won()
        let nodeId = nodeIdentity.nodeId
        storeWrite({ db in
            try db.setMetadata("node.role", NodeRole.master.rawValue)
            try db.setMetadata("store.id", c.store)
            try db.setVote(term: c.term, nodeId: nodeId)
            try db.becomeMasterFromStandby(
                term: c.term, lineage: c.lineage, oldMaster: try db.standbyMaster(), atMillis: WallClock.nowMillis())
            try db.claimOwnMemberNumber(nodeId: nodeId)
            return MasterTerms(term: try db.term(), starts: try db.termStarts())
        }) { [weak self] result in
            guard let self, self.candidacy === c else { return }
            switch result {
            case .success(let terms):
                self.engine.terms = terms
                // The term's first seq follows the replica's, which may stand past its journal.
                try? self.engine.journalExtended()
                self.becameMaster(c, report)
            case .failure(let error):
                self.withdraw(c, self.storageRefusal(c, error))
            }
        }
    }

    /// The term is on disk: master proper. Publishes `role=master`, serves the held messages
    /// in order and answers `ordersync promote`.
    private func becameMaster(_ c: MasterCandidacy, _ report: PromotionReport) {
        candidacy = nil
        api.promoteHandler = nil
        publishService()
        // What this node acknowledged as a slave goes first, before the terminals' messages.
        enqueueOwnOutbox()
        for (session, bytes) in c.takeHeld() where sessions[session] != nil {
            enqueue(.message(session: session, bytes: bytes))
        }
        var answer = report
        answer.seq = engine.lastSeq
        answer.tookMs = c.tookMs(now: loop.now)
        logger.notice(
            "promote.done",
            metadata: [
                "term": "\(c.term)", "seq": "\(answer.seq)", "forced": "\(answer.forced)", "took_ms": "\(answer.tookMs)",
                "promised": "\(answer.promised.joined(separator: ","))", "unreachable": "\(answer.unreachable.joined(separator: ","))",
            ])
        serviceManager.ready(status: readinessStatus)
        if c.automatic { metrics.automaticPromotions.increment() }
        leaseMembersChanged()
        c.respond.encoded(200, answer)
    }

    /// Gives up: answers the refusal, and plays slave again on the same seat (nothing but its
    /// own vote, if it got that far, was persisted).
    func withdraw(_ c: MasterCandidacy, _ report: PromotionReport) {
        if let t = c.deadline { loop.cancel(t) }
        c.deadline = nil
        c.withdrew()
        var answer = report
        answer.tookMs = c.tookMs(now: loop.now)
        logger.warning(
            "promote.withdrawn",
            metadata: [
                "term": "\(c.term)", "reason": "\(answer.refusal?.code.rawValue ?? "-")",
                "unreachable": "\(answer.unreachable.joined(separator: ","))",
            ])
        c.respond.encoded(409, answer)
        let (seat, loop, discovery, logger) = (self.seat, self.loop, self.discovery, self.logger)
        seat.requestHandOver?("promotion withdrawn") {
            .slave(
                try SlaveNode(
                    configuration: c.slaveConfiguration, loop: loop, dataDirectory: seat.dataDirectory, discovery: discovery,
                    logger: logger, reconnectJitter: c.slaveJitter, seat: seat))
        }
    }
}
