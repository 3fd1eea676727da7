import WireTestSupport

@testable import SyncCore

/// The master's process: its store (which survives crashes) and, while it runs, its engine.
final class MasterNode {
    let store: any SimMasterStore
    var engine: MasterEngine?
    /// Bumped at every start and crash: timers of an earlier process do nothing.
    var incarnation = 0
    /// Links the master has not learned to be closed, by peer id.
    var links: [Int: SimConnection] = [:]
    var crashes = 0
    /// Its own wall clock (skewed against the slaves').
    var wallClock = SimNodeClock(offsetMillis: 0, driftPPM: 0)

    init(store: any SimMasterStore) {
        self.store = store
    }
}

/// A slave's process: its store (which survives crashes) and, while it runs, its engine.
final class SlaveNode {
    let index: Int
    let terminalId: String
    let store: any SimSlaveStore
    let configuredStore: String?
    var engine: SlaveEngine?
    var incarnation = 0
    /// The link it uses (at most one: it reconnects only after learning the last one ended).
    var link: SimConnection?
    var reconnectScheduled = false
    var crashes = 0
    /// Its POS app's recent writes, for client retries with the same operation id.
    var recent: [(at: Int64, opId: String, message: OperationMessage)] = []
    /// Its own wall clock (skewed against the master's and the other slaves').
    var wallClock = SimNodeClock(offsetMillis: 0, driftPPM: 0)
    /// An operation message held back by the reordering mutation, with the link it was for.
    var heldBack: (link: Int, text: String)?

    init(index: Int, terminalId: String, store: any SimSlaveStore, configuredStore: String?) {
        self.index = index
        self.terminalId = terminalId
        self.store = store
        self.configuredStore = configuredStore
    }

    var tag: String { "s\(index)" }
    var name: String { "till-\(index + 1)" }
}

/// Starting nodes, carrying out the engines' actions, timers and links.
extension Simulation {
    func startMaster() {
        let e: MasterEngine
        do {
            e = try MasterEngine(store: master.store, storeId: storeId, epoch: epoch)
        } catch {
            checker.fail(self, "engine", "the master could not start: \(error)")
            return
        }
        // Small limits, so the simulation exercises multi-part snapshots, the snapshot fallback
        // and journal compaction.
        e.snapshotChunk = 3
        e.maxCatchUpEntries = 15
        e.journalKeepNewest = Simulation.journalKeepNewest
        e.journalKeepMillis = Simulation.journalKeepMillis
        master.engine = e
        master.incarnation += 1
        trace.add(clock.now, "m", "start", "lastSeq=\(e.lastSeq)")
        let inc = master.incarnation
        clock.schedule(after: master.wallClock.virtualDelay(1000)) { [unowned self] in self.heartbeatTick(inc) }
        clock.schedule(after: master.wallClock.virtualDelay(5000)) { [unowned self] in self.maintenanceTick(inc) }
    }

    private func heartbeatTick(_ inc: Int) {
        guard master.incarnation == inc, let e = master.engine else { return }
        for id in master.links.keys.sorted() {
            if let beat = e.heartbeat(for: id, now: masterNow), let c = master.links[id] { network.send(beat.text, on: c, from: .master) }
        }
        clock.schedule(after: master.wallClock.virtualDelay(1000)) { [unowned self] in self.heartbeatTick(inc) }
    }

    private func maintenanceTick(_ inc: Int) {
        guard master.incarnation == inc, let e = master.engine else { return }
        performMaster(e.maintenance(now: masterNow))
        clock.schedule(after: master.wallClock.virtualDelay(5000)) { [unowned self] in self.maintenanceTick(inc) }
    }

    func startSlave(_ s: SlaveNode) {
        do {
            s.engine = try SlaveEngine(
                store: s.store, terminalId: s.terminalId, terminalName: s.name,
                configuredStore: s.configuredStore)
        } catch {
            checker.fail(self, "engine", "\(s.tag) could not start: \(error)")
            return
        }
        s.incarnation += 1
        s.reconnectScheduled = false
        trace.add(clock.now, s.tag, "start", "lastSeq=\(s.store.lastSeq) outbox=\(s.store.outbox.count)")
        checker.checkOutboxVisible(self, s)
        scheduleReconnect(s, after: rng.int(Int64(0)...300))
    }

    func scheduleReconnect(_ s: SlaveNode, after: Int64? = nil) {
        guard !s.reconnectScheduled else { return }
        s.reconnectScheduled = true
        let inc = s.incarnation
        clock.schedule(after: after ?? rng.int(Int64(200)...2000)) { [unowned self] in
            guard s.incarnation == inc else { return }
            s.reconnectScheduled = false
            guard s.engine != nil, s.link == nil else { return }
            if self.master.engine != nil {
                self.connect(s)
            } else {
                self.scheduleReconnect(s)
            }
        }
    }

    private func connect(_ s: SlaveNode) {
        guard let m = master.engine, let e = s.engine else { return }
        let c = network.open(slave: s.index)
        master.links[c.id] = c
        s.link = c
        stats.connections += 1
        trace.add(clock.now, s.tag, "connect", "link \(c.id)")
        // The link proves the slave's key: the master knows it as its paired terminal.
        let terminal = AuthenticatedTerminal(nodeId: s.terminalId, name: s.name)
        performMaster(m.peerConnected(c.id, address: "10.0.0.\(s.index + 10):\(40000 + c.id)", terminal: terminal))
        performSlave(s, e.linkOpened(now: slaveNow(s)))
    }

    func arrived(_ text: String, on c: SimConnection, at side: SimSide) {
        switch side {
        case .master:
            guard let e = master.engine, master.links[c.id] === c else { return }
            trace.add(clock.now, "m", "<- s\(c.slave)#\(c.id)", text)
            if config.mutation == .applyRepeat { noteReceivedUpdate(text, from: c.slave) }
            performMaster(e.received(text.bytes, from: c.id, now: masterNow))
        case .slave:
            let s = slaves[c.slave]
            guard let e = s.engine, s.link === c else { return }
            trace.add(clock.now, s.tag, "<- m#\(c.id)", text)
            if config.mutation == .dropAnswers, dropsAnswer(text) { return }
            performSlave(s, e.received(text.bytes, now: slaveNow(s)))
            checker.checkOutboxVisible(self, s)
        }
    }

    func learnedClose(_ c: SimConnection, at side: SimSide) {
        switch side {
        case .master:
            guard let e = master.engine, master.links[c.id] === c else { return }
            master.links[c.id] = nil
            trace.add(clock.now, "m", "closed", "link \(c.id) of s\(c.slave)")
            performMaster(e.peerDisconnected(c.id, now: masterNow))
        case .slave:
            let s = slaves[c.slave]
            guard let e = s.engine, s.link === c else { return }
            s.link = nil
            trace.add(clock.now, s.tag, "closed", "link \(c.id)")
            e.linkClosed()
            scheduleReconnect(s)
        }
    }

    func performMaster(_ actions: [MasterEngine.Action]) {
        for a in actions {
            switch a {
            case .send(let peer, let bytes):
                // The simulated network and the trace carry the messages as text.
                let text = bytes.text
                if text.hasPrefix("{\"type\":\"result\"") { checker.masterAnswered(self, text) }
                if let c = master.links[peer] { network.send(text, on: c, from: .master) }
            case .broadcast(let bytes, let peers):
                let text = bytes.text
                for p in peers {
                    if let c = master.links[p] { network.send(text, on: c, from: .master) }
                }
            case .close(let peer, let code, let reason):
                trace.add(clock.now, "m", "close", "link \(peer) code \(code): \(reason)")
                if let c = master.links.removeValue(forKey: peer) {
                    network.closeGracefully(c, by: .master)
                    if let e = master.engine { performMaster(e.peerDisconnected(peer, now: masterNow)) }
                }
            case .log(let l):
                trace.log(clock.now, "m", l)
            case .stepDown(let term):
                trace.add(clock.now, "m", "step-down", "term \(term)")
            }
        }
    }

    func performSlave(_ s: SlaveNode, _ actions: [SlaveEngine.Action]) {
        for a in actions {
            switch a {
            case .send(let bytes):
                if let c = s.link { sendFromSlave(s, bytes.text, on: c) }
            case .resync(let reason):
                stats.resyncs += 1
                dropLink(s, graceful: true, reason)
            case .abort(let reason):
                stats.aborts += 1
                dropLink(s, graceful: false, reason)
            case .scheduleAck:
                let inc = s.incarnation
                clock.schedule(after: s.wallClock.virtualDelay(200)) { [unowned self] in
                    guard s.incarnation == inc, let e = s.engine else { return }
                    self.performSlave(s, e.ackDue())
                }
            case .scheduleOutboxRetry(let millis):
                let inc = s.incarnation
                clock.schedule(after: s.wallClock.virtualDelay(millis)) { [unowned self] in
                    guard s.incarnation == inc, let e = s.engine else { return }
                    self.trace.add(self.clock.now, s.tag, "retry outbox")
                    self.performSlave(s, e.retryOutbox())
                }
            case .answered(let opId, let seq, let applied, let errors, let pending):
                if pending { stats.answeredPending += 1 }
                trace.add(
                    clock.now, s.tag, "answered",
                    "op \(opId) seq \(seq.map(String.init) ?? "nil") applied \(applied.count) "
                        + "errors [\(errors.map(\.code.rawValue).joined(separator: ","))] pending \(pending)")
            case .synced(let seq, _, _):
                trace.add(clock.now, s.tag, "synced", "seq \(seq)")
            case .log(let l):
                trace.log(clock.now, s.tag, l)
            }
        }
    }

    /// The slave closes its link (normally, or at once) and connects again after a backoff.
    private func dropLink(_ s: SlaveNode, graceful: Bool, _ reason: String) {
        trace.add(clock.now, s.tag, graceful ? "resync" : "abort", reason)
        guard let c = s.link else { return }
        s.link = nil
        if graceful {
            network.closeGracefully(c, by: .slave)
        } else {
            network.cut(c, dead: .slave, counted: false)
        }
        s.engine?.linkClosed()
        scheduleReconnect(s)
    }
}
