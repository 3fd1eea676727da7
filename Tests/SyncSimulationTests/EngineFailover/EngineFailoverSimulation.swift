import OrderStore

@testable import SyncCore

/// How one engine failover run is set up.
struct EngineFailoverConfig {
    var seed: UInt64
    /// Virtual length of the phase with writes and faults.
    var faultMillis: Int64 = 40_000
    /// The quiet phase must settle within this.
    var quietLimitMillis: Int64 = 120_000
    var mutation: EngineFailoverMutation?
    /// Trace lines kept and printed with a failure.
    var traceLines = 60
}

/// What one engine failover run produced.
struct EngineFailoverOutcome {
    var seed: UInt64
    var violations: [FailoverViolation]
    var stats: EngineFailoverStats
    var trace: [String]
}

/// Issue 26's failover through the real sync code: every node keeps an in-memory SQLite store
/// (`OrderDatabase.inMemory()`) and runs the engine of its role over the node's adapters
/// (`MasterEngine` on `SQLiteMasterStore`, `SlaveEngine` on `SQLiteSlaveStore`). A promotion goes
/// the node's way through the store (`sync.term`/`sync.vote`, `applyFetchedEntries`,
/// `becomeMasterFromStandby`, the own outbox applied by `ownOutboxWrite`) and then runs a real
/// `MasterEngine`; a returning old master steps down as the node does (its store made a replica
/// of its journal) and runs a real `SlaveEngine`, which the new master's `diverged` makes
/// re-queue its tail; slaves follow higher terms (`FollowPolicy`) through their `SlaveEngine`.
/// The election messages go between nodes as the real `ElectionMessage`s, handled with the real
/// `Candidacy` and `FollowPolicy` (the node's socket glue is not what is under test).
///
/// The scenario is `FailoverSimulation`'s: one master and 2 to 5 slaves (one in six a handheld),
/// writes on every node, links cut, slaves isolated and crashed; the master dies for good (60 %)
/// or is cut off and comes back; an operator promotes a slave when no master of the highest
/// term is visible (sometimes the least current, sometimes two at once, `--force` after
/// `no_majority` when the master is gone), and a rogue announces `term=999` in 30 % of the seeds.
final class EngineFailoverSimulation: SimOrderWriting {
    let config: EngineFailoverConfig
    let rng: SimRandom
    let clock = SimEventQueue()
    let network: SimNetwork
    let trace: SimTrace
    var nodes: [EngineFailoverNode] = []
    let checker = EngineFailoverChecker()
    var stats = EngineFailoverStats()
    var faultsOn = true
    var createdKeys: [String] = []
    let storeId = "shop1"
    /// The original master dies for good (else it is cut off and returns).
    let masterDiesForGood: Bool
    /// A rogue on the LAN announces the store with `term=999`.
    let rogue: Bool
    /// The code of the last promotion refused, for the operator's next move.
    var lastRefusal: PromotionReport.Refusal.Code?
    /// The masters' catch-up bound (`MasterEngine.maxCatchUpEntries`): a few entries in a third
    /// of the seeds, so that a standby that was away comes back by a snapshot of the history it
    /// followed rather than a catch-up, and keeps through it what a later `diverged` below the
    /// snapshot's base re-queues (Docs/PROTOCOL.md 7.19).
    let catchUpBound: Int
    /// How long a master's local API write waits for a standby (`--sync-timeout`).
    static let syncTimeoutMillis: Int64 = 2000

    init(_ config: EngineFailoverConfig) {
        self.config = config
        rng = SimRandom(seed: config.seed &* 6_700_417 &+ 29)
        network = SimNetwork(clock: clock, rng: rng)
        trace = SimTrace(capacity: max(200, config.traceLines), hashesText: false)
        let slaves = rng.int(2...5)
        for i in 0...slaves {
            let voter = i == 0 || !rng.chance(0.17)
            nodes.append(EngineFailoverNode(index: i, id: "node-\(i)", name: i == 0 ? "master" : "till-\(i)", isVoter: voter))
        }
        masterDiesForGood = rng.chance(0.6)
        rogue = rng.chance(0.3)
        catchUpBound = rng.chance(0.33) ? rng.int(2...8) : 10_000
        network.longDelayChance = rng.unit() * 0.03
        network.onMessage = { [unowned self] c, side, text in self.arrived(text, on: c, at: side) }
        network.onClosed = { [unowned self] c, side in self.closed(c, at: side) }
    }

    /// Node id to public key: every node of the store is a member (the rogue is not).
    lazy var members: [String: String] = Dictionary(
        uniqueKeysWithValues: nodes.map { ($0.id, String(repeating: "0", count: 63) + String($0.index, radix: 16)) })
    /// Voter id to name.
    lazy var voters: [String: String] = Dictionary(uniqueKeysWithValues: nodes.filter(\.isVoter).map { ($0.id, $0.name) })

    /// Runs the scenario and checks it.
    func run() -> EngineFailoverOutcome {
        trace.add(0, "sim", "start", "seed=\(config.seed) nodes=\(nodes.count) voters=\(voters.count) diesForGood=\(masterDiesForGood)")
        for n in nodes {
            do {
                n.db = try OrderDatabase.inMemory()
                n.slaveStore = EngineFailoverSlaveStore(db: n.db!, mutation: config.mutation)
                if n.index == 0 {
                    // The store's lineage from the seed (a database's own epoch is random).
                    try n.db?.setMetadata("node.role", "master")
                    try n.db?.setLineage(rng.uuid())
                }
            } catch {
                checker.fail(self, "store", "\(n.tag) could not open its store: \(error)")
            }
        }
        for n in nodes { start(n) }
        clock.schedule(after: rng.int(Int64(200)...600)) { [unowned self] in self.writeTick() }
        clock.schedule(after: rng.int(Int64(500)...2000)) { [unowned self] in self.chaosTick() }
        clock.schedule(after: rng.int(Int64(3000)...25_000)) { [unowned self] in self.masterFails() }
        clock.schedule(after: 1000) { [unowned self] in self.operatorTick() }
        while let t = clock.nextTime, t <= config.faultMillis, checker.violations.isEmpty { clock.runNext() }
        let settled = checker.violations.isEmpty && quietPhase()
        checker.finish(self, settled: settled)
        stats.virtualMillis += clock.now
        stats.cuts += network.cuts
        stats.messages += network.delivered
        return EngineFailoverOutcome(seed: config.seed, violations: checker.violations, stats: stats, trace: trace.tail(config.traceLines))
    }

    /// No more writes or faults; isolated nodes come back, crashed ones restart; run until one
    /// master serves every other node.
    private func quietPhase() -> Bool {
        faultsOn = false
        network.longDelayChance = 0
        trace.add(clock.now, "sim", "quiet")
        for n in nodes where n.isolatedUntil > clock.now { n.isolatedUntil = clock.now }
        for n in nodes {
            if case .down = n.role { start(n) }
        }
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
            let why = nodes.map { n -> String in
                var s = "\(n.tag) \(n.role.name) term=\(n.announcedTerm) at \(n.position) link=\(n.linkTarget.map(String.init) ?? "-")"
                if let e = n.slave {
                    s +=
                        " \(e.link.rawValue) lastSeq=\(e.lastSeq) outbox=\(e.outboxCount) inFlight=\(e.inFlightCount) snapshot=\(e.needsSnapshot)"
                }
                if let e = n.master { s += " lastSeq=\(e.lastSeq) waits=\(n.waits.count)" }
                return s
            }
            checker.fail(self, "convergence", "not settled: " + why.joined(separator: "; "))
        }
        return false
    }

    /// The one master of the highest term serves every other live node, which is live on its
    /// link, at its sequence, with nothing waiting.
    func settled() -> Bool {
        let up = nodes.filter(\.isUp)
        let masters = up.filter { $0.master != nil }
        guard masters.count == 1, let m = masters.first, let me = m.master, m.waits.count == 0,
            (try? m.db?.outboxEntries().isEmpty) == true
        else { return false }
        for n in up where n !== m {
            guard let e = n.slave, n.linkTarget == m.index, e.link == .live, e.outboxCount == 0, e.inFlightCount == 0,
                !e.needsSnapshot, e.lastSeq == me.lastSeq
            else { return false }
        }
        return true
    }

    // MARK: Processes

    /// Starts `n`'s process in the role its store says (`node.role`), as the node does.
    func start(_ n: EngineFailoverNode) {
        guard let db = n.db else { return }
        n.incarnation += 1
        n.reconnectScheduled = false
        n.laterTermSeenAt = nil
        do {
            if try db.metadata("node.role") == "master" {
                let e = try MasterEngine(store: SQLiteMasterStore(db: db), storeId: storeId, epoch: try db.lineage())
                e.snapshotChunk = 5
                e.maxCatchUpEntries = catchUpBound
                n.role = .master(e)
                n.followed = n.id
                membersChanged(n)
            } else {
                let e = try SlaveEngine(store: n.slaveStore!, terminalId: n.id, terminalName: n.name, configuredStore: storeId)
                n.role = .slave(e)
                n.followed = nil
            }
        } catch {
            return checker.fail(self, "store", "\(n.tag) could not start: \(error)")
        }
        trace.add(clock.now, n.tag, "start", "\(n.role.name) term=\(n.announcedTerm) at \(n.position)")
        scheduleBrowse(n, after: rng.int(Int64(0)...300))
        if n.master != nil { scheduleHeartbeat(n) }
    }

    /// The store's members as a master tells its standbys (every node; the old master as the
    /// standby copy's master).
    func membersChanged(_ n: EngineFailoverNode) {
        guard let e = n.master else { return }
        let terminals = nodes.filter { $0 !== n }.map {
            MemberTerminal(
                member: StoreMember(id: $0.id, key: members[$0.id]!, name: $0.name), pairedMillis: 0, revokedMillis: nil, voter: $0.isVoter)
        }
        let m = StoreMembers(term: e.terms.term, master: StoreMember(id: n.id, key: members[n.id]!, name: n.name), terminals: terminals)
        performMaster(n, e.membersChanged(m))
    }

    /// The process of `n` ends (crash, or its disk dies with `.gone`): links break at once;
    /// writes waiting for a standby are never answered.
    func stop(_ n: EngineFailoverNode, as role: EngineFailoverRole) {
        n.role = role
        n.incarnation += 1
        n.crashes += 1
        n.waits = ReplicationWaits()
        n.followed = nil
        if let c = n.link { network.cut(c, dead: .slave, counted: false) }
        n.link = nil
        n.linkTarget = nil
        for p in n.servedPeers { network.cut(p.link, dead: .master, counted: false) }
        n.served = [:]
        if case .gone = role {
            n.db = nil
            n.slaveStore = nil
        } else if n.db?.isInTransaction == true {
            checker.fail(self, "store", "a transaction was open when \(n.tag) crashed")
        }
    }

    // MARK: Faults

    /// Node 0 fails: for good (store gone) or cut off for a while (store kept).
    private func masterFails() {
        let m = nodes[0]
        guard m.master != nil else { return }
        if masterDiesForGood {
            trace.add(clock.now, m.tag, "dies for good", "at \(m.position)")
            stop(m, as: .gone)
            checker.destroyed.insert(m.index)
        } else {
            let back = rng.int(Int64(5000)...30_000)
            trace.add(clock.now, m.tag, "cut off", "for \(back) ms")
            isolate(m, for: back)
        }
    }

    /// The process of `n` crashes; it starts again 0.3-4 s later.
    func crash(_ n: EngineFailoverNode) {
        trace.add(clock.now, n.tag, "crash")
        stop(n, as: .down)
        stats.crashes += 1
        let inc = n.incarnation
        clock.schedule(after: rng.int(Int64(300)...4000)) { [unowned self] in
            guard n.incarnation == inc, case .down = n.role else { return }
            self.start(n)
        }
    }
}

extension EngineFailoverSimulation: FailoverLAN {}
