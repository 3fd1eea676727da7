import SyncCore

/// How one simulated run is set up.
struct SimConfig {
    var seed: UInt64
    /// Virtual length of the phase with writes and faults.
    var faultMillis: Int64 = 40_000
    /// The quiet phase must converge within this.
    var quietLimitMillis: Int64 = 300_000
    /// Mix whole message texts into the trace hash (for the same-seed test).
    var hashesText = false
    /// Trace lines kept and printed with a failure.
    var traceLines = 40
    /// Fault kinds left out (for narrowing a failure down): cut, master-crash, slave-crash,
    /// master-disk, master-disk-after, slave-disk, records, duplicate, delay, client-retry,
    /// clock-jump.
    var disabledFaults: Set<String> = []
    /// Makes the master's store (in memory, on SQLite, or a broken one for the checker's
    /// self-tests).
    var makeMasterStore: () -> any SimMasterStore = { InMemoryMasterStore() }
    /// Makes each slave's store.
    var makeSlaveStore: () -> any SimSlaveStore = { InMemorySlaveStore() }
    /// A deliberate engine bug (for the checker's self-tests; nil: the engines as shipped).
    var mutation: SimMutation?
}

/// What a run produced.
struct SimOutcome {
    var seed: UInt64
    var violations: [SimViolation]
    var stats: SimStats
    var traceHash: String
    var stateHash: String
    var traceTail: [String]
    /// The run's last trace lines (printed too when more than the default 40 are asked for).
    var finalTrace: [String]
}

/// The simulation of a whole store: one master and 2-5 slaves, their real engines, in-memory
/// stores and an in-memory network, driven by one seeded generator and a virtual clock.
///
/// A run has a fault phase (local writes on slaves and the master; links cut, messages delayed
/// and duplicated, nodes crashed and restarted, commits failing) and a quiet phase (no writes,
/// no faults, every node up) that must end with every replica equal to the master's.
final class Simulation {
    /// The newest journal entries the master keeps whatever their age: so few that, once a
    /// clock jump (`SimClockJump.swift`) aged the journal, a terminal a second behind needs
    /// the entries that acknowledgements alone keep.
    static let journalKeepNewest: Int64 = 3

    let config: SimConfig
    let rng: SimRandom
    let clock = SimEventQueue()
    let network: SimNetwork
    let trace: SimTrace
    let checker: SimChecker
    let master: MasterNode
    var slaves: [SlaveNode] = []
    var stats = SimStats()
    let storeId = "shop1"
    let epoch: String
    /// False in the quiet phase.
    var faultsOn = true
    /// Order keys created so far (any node), oldest first; updates and removes pick recent ones.
    var createdKeys: [String] = []
    /// Operation ids a POS app sent again after an answer from its local API.
    var clientRetried: Set<String> = []
    /// Bookkeeping of the mutations (`SimMutation`): answers seen and dropped, operations sent.
    var answersSeen = 0
    var droppedAnswers: Set<String> = []
    var operationsSent = 0
    /// Update messages the master received from slaves (for the `applyRepeat` mutation), in
    /// arrival order, with their text and sender.
    var receivedUpdates: [(opId: String, message: OperationMessage, text: String, slave: Int)] = []

    // Fault rates of this seed.
    var cutWeight = 0.45
    var masterCrashWeight = 0.06
    var slaveCrashWeight = 0.15
    var chaosGap: ClosedRange<Int64> = 400...2500
    var writeGap: ClosedRange<Int64> = 100...900
    var masterCommitFail = 0.03
    var masterCommitFailAfter = 0.03
    var rejectionFail = 0.02
    var terminalSaveFail = 0.02
    var slaveCommitFail = 0.02
    var clientRetryChance = 0.08

    init(_ config: SimConfig) {
        self.config = config
        rng = SimRandom(seed: config.seed)
        network = SimNetwork(clock: clock, rng: rng)
        trace = SimTrace(capacity: max(80, config.traceLines), hashesText: config.hashesText)
        checker = SimChecker()
        epoch = rng.uuid()
        master = MasterNode(store: config.makeMasterStore())
        let n = rng.int(2...5)
        for i in 0..<n {
            let configured: String? = rng.chance(0.5) ? "shop1" : nil
            slaves.append(SlaveNode(index: i, terminalId: rng.uuid(), store: config.makeSlaveStore(), configuredStore: configured))
        }
        master.wallClock = SimNodeClock.random(rng)
        for s in slaves { s.wallClock = SimNodeClock.random(rng) }
        chooseFaultRates()
        wireFaults()
        network.onMessage = { [unowned self] c, side, text in self.arrived(text, on: c, at: side) }
        network.onClosed = { [unowned self] c, side in self.learnedClose(c, at: side) }
    }

    /// The master's wall clock now (each node reads its own, skewed clock; it orders nothing).
    var masterNow: Int64 { master.wallClock.wall(atVirtual: clock.now) }

    /// A slave's wall clock now.
    func slaveNow(_ s: SlaveNode) -> Int64 { s.wallClock.wall(atVirtual: clock.now) }

    private func chooseFaultRates() {
        let calm = rng.chance(0.2)
        cutWeight = calm ? 0.2 : 0.3 + rng.unit() * 0.3
        masterCrashWeight = rng.unit() * 0.1
        slaveCrashWeight = rng.unit() * 0.2
        chaosGap = calm ? 1500...5000 : 300...2500
        writeGap = rng.chance(0.3) ? 50...400 : 100...1000
        network.duplicateChance = rng.chance(0.5) ? 0.01 : 0
        network.longDelayChance = rng.unit() * 0.05
        masterCommitFail = rng.unit() * 0.05
        masterCommitFailAfter = rng.unit() * 0.05
        rejectionFail = rng.unit() * 0.03
        terminalSaveFail = rng.unit() * 0.03
        slaveCommitFail = rng.unit() * 0.03
        let off = config.disabledFaults
        if off.contains("cut") { cutWeight = 0 }
        if off.contains("master-crash") { masterCrashWeight = 0 }
        if off.contains("slave-crash") { slaveCrashWeight = 0 }
        if off.contains("master-disk") { masterCommitFail = 0 }
        if off.contains("master-disk-after") { masterCommitFailAfter = 0 }
        if off.contains("slave-disk") { slaveCommitFail = 0 }
        if off.contains("records") { rejectionFail = 0; terminalSaveFail = 0 }
        if off.contains("duplicate") { network.duplicateChance = 0 }
        if off.contains("delay") { network.longDelayChance = 0 }
        clientRetryChance = off.contains("client-retry") ? 0 : 0.08
    }

    private func wireFaults() {
        master.store.faults = { [unowned self] call in
            guard self.faultsOn else { return .none }
            switch call {
            case .commit:
                if self.rng.chance(self.masterCommitFail) { self.stats.masterCommitFailBefore += 1; return .failBefore }
                if self.rng.chance(self.masterCommitFailAfter) { self.stats.masterCommitFailAfter += 1; return .failAfter }
            case .appendRejection:
                if self.rng.chance(self.rejectionFail) { self.stats.rejectionFails += 1; return .failBefore }
            case .saveTerminals:
                if self.rng.chance(self.terminalSaveFail) { self.stats.terminalSaveFails += 1; return .failBefore }
            }
            return .none
        }
        for s in slaves {
            s.store.faults = { [unowned self] in
                guard self.faultsOn, self.rng.chance(self.slaveCommitFail) else { return false }
                self.stats.slaveCommitFails += 1
                return true
            }
        }
    }

    /// Runs the whole simulation and checks every invariant.
    func run() -> SimOutcome {
        trace.add(0, "sim", "start", "seed=\(config.seed) slaves=\(slaves.count) epoch=\(epoch)")
        startMaster()
        for s in slaves {
            clock.schedule(after: rng.int(Int64(0)...1000)) { [unowned self] in self.startSlave(s) }
        }
        clock.schedule(after: rng.int(Int64(200)...800)) { [unowned self] in self.writeTick() }
        clock.schedule(after: rng.int(chaosGap)) { [unowned self] in self.chaosTick() }
        scheduleClockJump()

        while let t = clock.nextTime, t <= config.faultMillis, checker.violations.isEmpty {
            clock.runNext()
        }
        let settled = checker.violations.isEmpty && quietPhase()
        if settled { checkClockSense() }
        stats.events += clock.executed
        stats.virtualMillis += clock.now
        stats.masterCrashes += master.crashes
        stats.slaveCrashes += slaves.reduce(0) { $0 + $1.crashes }
        stats.cuts += network.cuts
        stats.duplicates += network.duplicated
        stats.delays += network.delayed
        stats.messages += network.delivered
        stats.lostMessages += network.lost
        stats.gracefulCloses += network.gracefulCloses
        stats.snapshots += slaves.reduce(0) { n, s in n + s.store.appliedLog.filter(\.snapshot).count }
        checker.finish(self, settled: settled)
        return SimOutcome(
            seed: config.seed, violations: checker.violations, stats: stats, traceHash: trace.hash.hex,
            stateHash: SimChecker.stateHash(master.store.orders), traceTail: checker.violations.first?.trace ?? [],
            finalTrace: config.traceLines > 40 ? trace.tail(config.traceLines) : [])
    }

    /// No more writes or faults; every node comes back; run until every replica is up to date.
    private func quietPhase() -> Bool {
        faultsOn = false
        network.duplicateChance = 0
        network.longDelayChance = 0
        trace.add(clock.now, "sim", "quiet")
        let start = clock.now
        let deadline = start + config.quietLimitMillis
        while checker.violations.isEmpty {
            if settled() {
                let took = clock.now - start
                stats.convergenceMax = max(stats.convergenceMax, took)
                stats.convergenceTotal += took
                trace.add(clock.now, "sim", "settled", "after \(took) ms")
                return true
            }
            guard let t = clock.nextTime, t <= deadline else { break }
            clock.runNext()
        }
        guard checker.violations.isEmpty else { return false }
        var why: [String] = []
        if master.engine == nil { why.append("master down") }
        for s in slaves {
            guard let e = s.engine else {
                why.append("\(s.tag) down")
                continue
            }
            why.append(
                "\(s.tag): link=\(e.link.rawValue) lastSeq=\(e.lastSeq) master=\(master.engine?.lastSeq ?? -1) "
                    + "outbox=\(e.outboxCount) inFlight=\(e.inFlightCount) needsSnapshot=\(e.needsSnapshot) "
                    + "waiting: \(e.outbox.map { SimChecker.history(of: $0.opId, self) }.joined(separator: ", "))")
        }
        checker.fail(
            self, "convergence",
            "not settled \(config.quietLimitMillis) ms after the faults stopped: "
                + why.joined(separator: "; "))
        return false
    }

    /// Every slave live, its outbox empty and answered, its replica at the master's sequence.
    func settled() -> Bool {
        guard let m = master.engine else { return false }
        for s in slaves {
            guard let e = s.engine, s.link != nil, e.link == .live, e.outboxCount == 0, e.inFlightCount == 0,
                !e.needsSnapshot, e.lastSeq == m.lastSeq
            else { return false }
        }
        return true
    }

    // MARK: Faults

    private func chaosTick() {
        guard faultsOn else { return }
        let total = cutWeight + masterCrashWeight + slaveCrashWeight + 0.1
        var r = rng.unit() * total
        if r < cutWeight {
            let linked = slaves.filter { $0.link != nil }
            if !linked.isEmpty, let c = rng.pick(linked).link {
                trace.add(clock.now, "net", "cut", "link \(c.id) of s\(c.slave)")
                network.cut(c, dead: nil)
            }
        } else if (r - cutWeight) < masterCrashWeight {
            crashMaster()
        } else {
            r -= cutWeight + masterCrashWeight
            if r < slaveCrashWeight {
                let up = slaves.filter { $0.engine != nil }
                if !up.isEmpty { crashSlave(rng.pick(up)) }
            }
        }
        clock.schedule(after: rng.int(chaosGap)) { [unowned self] in self.chaosTick() }
    }

    /// The master's process dies: every link breaks; it restarts from its store, same epoch.
    func crashMaster() {
        guard master.engine != nil else { return }
        trace.add(clock.now, "m", "crash")
        master.engine = nil
        master.store.crashed()
        master.incarnation += 1
        master.crashes += 1
        for id in master.links.keys.sorted() {
            if let c = master.links[id] { network.cut(c, dead: .master, counted: false) }
        }
        master.links = [:]
        clock.schedule(after: rng.int(Int64(300)...4000)) { [unowned self] in self.startMaster() }
    }

    /// A slave's process dies: its link breaks; it restarts from its store.
    func crashSlave(_ s: SlaveNode) {
        guard s.engine != nil else { return }
        trace.add(clock.now, s.tag, "crash")
        s.engine = nil
        s.incarnation += 1
        s.crashes += 1
        s.reconnectScheduled = false
        if let c = s.link {
            network.cut(c, dead: .slave, counted: false)
            s.link = nil
        }
        s.store.crashed()
        clock.schedule(after: rng.int(Int64(300)...4000)) { [unowned self] in self.startSlave(s) }
    }
}
