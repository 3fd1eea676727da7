@testable import SyncCore

/// A deliberate bug for the failover checker's self-tests.
enum FailoverMutation: String, CaseIterable {
    /// A voter pre-votes for and promises every member candidate of its term or a later one,
    /// and candidates bid the `+1` term of earlier versions rather than a ballot they own (two
    /// candidates of one term may both win; with owned ballots no two share a term).
    case grantEveryPromise
    /// A slave told `diverged` drops its tail instead of queueing it again.
    case dropDivergedTail
    /// A candidate that fetched nothing from a voter ahead becomes master anyway.
    case skipFetch
    /// design.md's rule for `diverged` and the fetch, as the master engine has it
    /// (`TermStarts.keep`): the seq before the first term after the other's last term, rather
    /// than the last seq both histories hold in the same term.
    case designKeep
}

/// How one failover run is set up.
struct FailoverConfig {
    var seed: UInt64
    /// Virtual length of the phase with writes and faults.
    var faultMillis: Int64 = 40_000
    /// The quiet phase must settle within this.
    var quietLimitMillis: Int64 = 120_000
    var mutation: FailoverMutation?
    /// Trace lines kept and printed with a failure.
    var traceLines = 60
}

/// The promotion model of issue 26: one master and 2 to 5 slaves whose journals carry terms;
/// the master dies for good (its store gone) or is cut off and returns later with its store;
/// an operator promotes a slave (at random, sometimes the least current one; now and then two
/// at once; `--force` after a refusal); the other slaves follow the higher term; a returning
/// master steps down and its divergent tail goes back to the outboxes. Links are cut and nodes
/// isolated and crashed meanwhile. It runs the real `Candidacy`, `FollowPolicy` and
/// `ElectionMessage`; the sync protocol around them is a model (design.md's hello, broadcasts
/// with terms, `diverged`, `stale_master`, ack `held`, a master's local API waiting for one
/// standby), not the engines.
///
/// Checked: no acknowledged operation lost (a slave's once in its outbox; a master's once a
/// standby held it, or once answered unreplicated when its master survives), none applied
/// twice, at most one master acknowledging per term, and every node converging on one master.
final class FailoverSimulation {
    let config: FailoverConfig
    let rng: SimRandom
    let clock = SimEventQueue()
    let network: SimNetwork
    let trace: SimTrace
    var nodes: [FailoverNode] = []
    let checker = FailoverChecker()
    var stats = FailoverStats()
    var faultsOn = true
    /// The original master dies for good (else it is cut off and returns).
    let masterDiesForGood: Bool
    /// A rogue on the LAN announces the store with `term=999`.
    let rogue: Bool
    /// The code of the last promotion refused, for the operator's next move.
    var lastRefusal: PromotionReport.Refusal.Code?

    init(_ config: FailoverConfig) {
        self.config = config
        rng = SimRandom(seed: config.seed &* 7919 &+ 17)
        network = SimNetwork(clock: clock, rng: rng)
        trace = SimTrace(capacity: max(200, config.traceLines), hashesText: false)
        let slaves = rng.int(2...5)
        for i in 0...slaves {
            // Node 0 is the master; about one slave in six is a handheld that does not vote.
            let voter = i == 0 || !rng.chance(0.17)
            nodes.append(FailoverNode(index: i, id: "node-\(i)", name: i == 0 ? "master" : "till-\(i)", isVoter: voter))
        }
        masterDiesForGood = rng.chance(0.6)
        rogue = rng.chance(0.3)
        network.duplicateChance = 0
        network.longDelayChance = rng.unit() * 0.03
        network.onMessage = { [unowned self] c, side, text in self.arrived(text, on: c, at: side) }
        network.onClosed = { [unowned self] c, side in self.closed(c, at: side) }
    }

    /// The last seq `n`'s history shares with `other` (design.md's rule with `designKeep`).
    func shared(_ n: FailoverNode, _ other: TermHistory) -> Int64 {
        config.mutation == .designKeep
            ? TermStarts(n.history.starts).keep(lastSeq: other.lastSeq, lastTerm: other.lastTerm, masterLastSeq: n.lastSeq)
            : n.history.sharedSeq(with: other)
    }

    /// Node id to public key: every node of the store is a member (the rogue is not).
    lazy var members: [String: String] = Dictionary(uniqueKeysWithValues: nodes.map { ($0.id, "key-\($0.index)") })
    /// Voter id to name.
    lazy var voters: [String: String] = Dictionary(uniqueKeysWithValues: nodes.filter(\.isVoter).map { ($0.id, $0.name) })

    /// Runs the scenario and checks it.
    func run() -> FailoverOutcome {
        let m = nodes[0]
        m.role = .master
        m.wasMaster = true
        m.incarnation = 1
        trace.add(0, "sim", "start", "seed=\(config.seed) nodes=\(nodes.count) voters=\(voters.count) diesForGood=\(masterDiesForGood)")
        for n in nodes where n.index > 0 {
            n.followed = m.id
            n.incarnation = 1
            scheduleBrowse(n, after: rng.int(Int64(0)...500))
        }
        scheduleBrowse(m, after: 500)
        clock.schedule(after: rng.int(Int64(100)...500)) { [unowned self] in self.writeTick() }
        clock.schedule(after: rng.int(Int64(500)...2000)) { [unowned self] in self.chaosTick() }
        clock.schedule(after: rng.int(Int64(3000)...25_000)) { [unowned self] in self.masterFails() }
        clock.schedule(after: 1000) { [unowned self] in self.operatorTick() }
        while let t = clock.nextTime, t <= config.faultMillis, checker.violations.isEmpty { clock.runNext() }
        let settled = checker.violations.isEmpty && quietPhase()
        checker.finish(self, settled: settled)
        stats.virtualMillis += clock.now
        stats.cuts += network.cuts
        stats.messages += network.delivered
        return FailoverOutcome(seed: config.seed, violations: checker.violations, stats: stats, trace: trace.tail(config.traceLines))
    }

    /// No more writes or faults; isolated nodes come back; run until one master serves all.
    private func quietPhase() -> Bool {
        faultsOn = false
        network.longDelayChance = 0
        trace.add(clock.now, "sim", "quiet")
        for n in nodes where n.isolatedUntil > clock.now { n.isolatedUntil = clock.now }
        for n in nodes where n.role == .down { restart(n) }
        let deadline = clock.now + config.quietLimitMillis
        while checker.violations.isEmpty {
            if settled() {
                trace.add(clock.now, "sim", "settled")
                return true
            }
            guard let t = clock.nextTime, t <= deadline else { break }
            clock.runNext()
        }
        if checker.violations.isEmpty {
            let why = nodes.map {
                "\($0.tag) \($0.role.rawValue) term=\($0.term) last=\($0.lastSeq) outbox=\($0.outbox.count) "
                    + "link=\($0.linkTarget.map(String.init) ?? "-") ready=\($0.linkReady) pending=\($0.pendingLocal.count) "
                    + "journal=\(Self.hash($0.journal))"
            }
            var detail = "not settled: " + why.joined(separator: "; ")
            if let m = nodes.first(where: { $0.role == .master }) {
                for n in nodes where n !== m && n.isUp {
                    if let i = zip(n.journal, m.journal).enumerated().first(where: { $0.element.0 != $0.element.1 })?.offset {
                        detail += "; \(n.tag) differs at \(n.journal[i]) vs \(m.journal[i])"
                    }
                }
            }
            checker.fail(self, "convergence", detail)
        }
        return false
    }

    /// A short hash of a journal, for a failure's report.
    static func hash(_ journal: [FailoverEntry]) -> String {
        var h = StableHash()
        for e in journal { h.add("\(e.seq)/\(e.term)/\(e.opId);") }
        return String(h.hex.prefix(8))
    }

    /// The one master of the highest term serves every other live node, which holds its journal
    /// and has nothing waiting.
    func settled() -> Bool {
        let up = nodes.filter(\.isUp)
        let masters = up.filter { $0.role == .master }
        guard masters.count == 1, let m = masters.first, m.pendingLocal.isEmpty, m.outbox.isEmpty else { return false }
        for n in up where n !== m {
            guard n.role == .slave, n.linkTarget == m.index, n.linkReady, n.outbox.isEmpty, n.journal == m.journal else {
                return false
            }
        }
        return true
    }

    // MARK: Faults

    /// Node 0 fails: for good (store gone) or cut off for a while (store kept).
    private func masterFails() {
        let m = nodes[0]
        guard m.role == .master else { return }
        if masterDiesForGood {
            trace.add(clock.now, m.tag, "dies for good", "lastSeq=\(m.lastSeq)")
            stop(m, as: .gone)
            checker.destroyed.insert(m.index)
        } else {
            let back = rng.int(Int64(5000)...30_000)
            trace.add(clock.now, m.tag, "cut off", "for \(back) ms")
            isolate(m, for: back)
        }
    }

    /// The process of `n` crashes; it starts again 0.3-4 s later.
    func crash(_ n: FailoverNode) {
        trace.add(clock.now, n.tag, "crash")
        stop(n, as: .down)
        let inc = n.incarnation
        clock.schedule(after: rng.int(Int64(300)...4000)) { [unowned self] in
            if n.incarnation == inc, n.role == .down { self.restart(n) }
        }
    }

    /// The process of `n` ends (crash, or its disk dies with `.gone`): links break at once.
    func stop(_ n: FailoverNode, as role: FailoverRole) {
        n.wasMaster = n.role == .master || (n.role != .candidate && n.wasMaster)
        n.role = role
        n.incarnation += 1
        n.candidacy = nil
        n.fetchSource = nil
        n.pendingLocal = []
        n.linkReady = false
        if let c = n.link { network.cut(c, dead: .slave, counted: false) }
        n.link = nil
        n.linkTarget = nil
        for p in n.servedPeers { network.cut(p.link, dead: .master, counted: false) }
        n.served = [:]
    }

    /// A crashed node starts again from its store, in the role it stopped in.
    func restart(_ n: FailoverNode) {
        n.incarnation += 1
        n.role = n.wasMaster ? .master : .slave
        trace.add(clock.now, n.tag, "start", "\(n.role.rawValue) term=\(n.term) lastSeq=\(n.lastSeq)")
        scheduleBrowse(n, after: rng.int(Int64(0)...300))
    }

    // MARK: Links

    /// `client` connects to `server` (a master or a candidate) and says hello.
    func connect(_ client: FailoverNode, to server: FailoverNode) {
        dropLink(client)
        let c = network.open(slave: client.index)
        client.link = c
        client.linkTarget = server.index
        server.served[c.id] = FailoverPeer(link: c, node: client.index)
        stats.connections += 1
        trace.add(clock.now, client.tag, "connect", "to \(server.tag) (\(server.role.rawValue)) link \(c.id)")
        send(.hello(node: client.index, history: client.history, term: client.term), on: c, from: .slave)
    }

    /// `client` closes its link normally.
    func dropLink(_ client: FailoverNode) {
        guard let c = client.link else { return }
        client.link = nil
        client.linkTarget = nil
        client.linkReady = false
        network.closeGracefully(c, by: .slave)
    }

    /// The server of link `c` closes it normally.
    func closeServed(_ server: FailoverNode, _ c: SimConnection) {
        server.served[c.id] = nil
        network.closeGracefully(c, by: .master)
    }

    func send(_ m: FailoverMessage, on c: SimConnection, from side: SimSide) {
        network.send(m.text, on: c, from: side)
    }

    /// The server of a link: the node that holds it in `served`.
    func server(of c: SimConnection) -> FailoverNode? {
        nodes.first { $0.served[c.id]?.link === c }
    }

    private func arrived(_ text: String, on c: SimConnection, at side: SimSide) {
        guard let m = FailoverMessage.parse(text) else {
            checker.fail(self, "model", "unreadable message \(text)")
            return
        }
        switch side {
        case .master:
            guard let s = server(of: c), s.isUp, let peer = s.served[c.id] else { return }
            trace.add(clock.now, s.tag, "<- \(nodes[peer.node].tag)#\(c.id)", text)
            serverReceived(m, from: peer, at: s)
        case .slave:
            let n = nodes[c.slave]
            guard n.isUp, n.link === c else { return }
            trace.add(clock.now, n.tag, "<- #\(c.id)", text)
            slaveReceived(m, on: c, at: n)
        }
    }

    private func closed(_ c: SimConnection, at side: SimSide) {
        switch side {
        case .master:
            guard let s = server(of: c), let peer = s.served.removeValue(forKey: c.id) else { return }
            trace.add(clock.now, s.tag, "closed", "link \(c.id) of \(nodes[peer.node].tag)")
            if s.role == .candidate { perform(s, s.candidacy?.linkLost(from: nodes[peer.node].id) ?? []) }
        case .slave:
            let n = nodes[c.slave]
            guard n.link === c else { return }
            n.link = nil
            n.linkTarget = nil
            n.linkReady = false
            trace.add(clock.now, n.tag, "closed", "link \(c.id)")
        }
    }
}

extension FailoverSimulation: FailoverLAN {}
