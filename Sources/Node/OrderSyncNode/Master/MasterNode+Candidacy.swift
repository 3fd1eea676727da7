import Foundation
import Logging
import NodePolicy
import OrderStore
import SyncCore

/// The candidate phase of a promotion (Docs/PROTOCOL.md, "Promotion"): the slave that became
/// this master publishes `role=candidate` with its new term, refuses writes with `promoting`,
/// holds the terminals' messages, and once it wins commits its term and becomes master proper:
/// `role=master`, the held messages served in order, `ordersync promote` answered. When it
/// loses it withdraws: nothing was persisted, the node plays slave again on the same seat.
extension MasterNode {
    /// The TXT members naming the term and the role (`term=T`, `role=candidate|master`).
    var termTXT: [(String, String)] {
        [("term", "\(term)"), ("role", candidacy == nil ? "master" : "candidate")]
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
            metadata: ["term": "\(c.term)", "epoch": "\(c.lineage)", "forced": "\(c.forced)", "seq": "\(engine.lastSeq)"])
        c.deadline = loop.schedule(after: MasterCandidacy.majorityDeadline) { [weak self, weak c] in
            guard let self, let c, self.candidacy === c, c.phase == .campaigning else { return }
            self.decide(c, majority: false)
        }
        // The votes come from the election; alone, the node's own vote decides at once.
        decide(c, majority: true)
    }

    /// A write or a terminal's message while the candidacy runs: true when the candidate took
    /// it (held, or refused), false when the node is master proper.
    func candidateRefusesWrite(_ respond: LocalAPIServer.Respond) -> Bool {
        guard candidacy != nil else { return false }
        respond(503, LocalAPIRoute.errorBody(code: "promoting", message: "this node is becoming the master; try again in a moment"))
        return true
    }

    /// A terminal's message while the candidacy runs: held until the node is master proper.
    func candidateHolds(_ bytes: [UInt8], from session: Int) -> Bool {
        guard let c = candidacy else { return false }
        c.hold(bytes, session: session)
        return true
    }

    /// The campaign is decided: a majority (or `--force`) commits the term; otherwise the
    /// candidate withdraws.
    private func decide(_ c: MasterCandidacy, majority: Bool) {
        if let t = c.deadline { loop.cancel(t) }
        c.deadline = nil
        guard majority || c.forced else {
            withdraw(c, PromoteRefusal(.noMajority, message: "no majority of the voters promised within the deadline"))
            return
        }
        if !majority { logger.error("promote.forced", metadata: ["term": "\(c.term)"]) }
        c.won()
        let nodeId = nodeIdentity.nodeId
        storeWrite({ db in
            try db.setMetadata("node.role", NodeRole.master.rawValue)
            try db.setMetadata("store.id", c.store)
            try db.setVote(term: c.term, nodeId: nodeId)
            try db.becomeMasterFromStandby(
                term: c.term, lineage: c.lineage, oldMaster: try db.standbyMaster(), atMillis: WallClock.nowMillis())
            return MasterTerms(term: try db.term(), starts: try db.termStarts())
        }) { [weak self] result in
            guard let self, self.candidacy === c else { return }
            switch result {
            case .success(let terms):
                self.engine.terms = terms
                self.becameMaster(c, forced: !majority)
            case .failure(let error):
                self.withdraw(c, PromoteRefusal(.noMajority, message: "the new term could not be committed: \(error)"))
            }
        }
    }

    /// The term is on disk: master proper. Publishes `role=master`, serves the held messages
    /// in order and answers `ordersync promote`.
    private func becameMaster(_ c: MasterCandidacy, forced: Bool) {
        candidacy = nil
        api.promoteHandler = nil
        publishService()
        for (session, bytes) in c.takeHeld() where sessions[session] != nil {
            enqueue(.message(session: session, bytes: bytes))
        }
        let me = terminalName
        let answer = PromoteAnswer(
            term: c.term, seq: engine.lastSeq, voters: [me], promised: [me], unreachable: [], fetched: nil, forced: forced,
            tookMs: c.tookMs(now: loop.now))
        logger.notice(
            "promote.done",
            metadata: ["term": "\(c.term)", "seq": "\(answer.seq)", "forced": "\(forced)", "took_ms": "\(answer.tookMs)"])
        serviceManager.ready(status: readinessStatus)
        c.respond.encoded(200, answer)
    }

    /// Gives up: answers the refusal, and plays slave again on the same seat (nothing was
    /// persisted).
    private func withdraw(_ c: MasterCandidacy, _ refusal: PromoteRefusal) {
        c.withdrew()
        logger.warning("promote.withdrawn", metadata: ["term": "\(c.term)", "reason": "\(refusal.code.rawValue)"])
        c.respond(refusal.httpStatus, refusal.jsonValue)
        let (seat, loop, discovery, logger) = (self.seat, self.loop, self.discovery, self.logger)
        seat.requestHandOver?("promotion withdrawn") {
            .slave(
                try SlaveNode(
                    configuration: c.slaveConfiguration, loop: loop, dataDirectory: seat.dataDirectory, discovery: discovery,
                    logger: logger, reconnectJitter: c.slaveJitter, seat: seat))
        }
    }
}
