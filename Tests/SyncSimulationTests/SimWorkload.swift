import JSON

@testable import SyncCore

/// The POS apps: random Create/Update/Remove messages (`SimOrderWriting`) through the slaves'
/// local API (and sometimes the master's), and client retries that send an operation id again.
extension Simulation {
    func writeTick() {
        guard faultsOn else { return }
        if config.mutation == .applyRepeat, rng.chance(0.2) {
            applyRepeat()
        } else if rng.chance(0.1) {
            masterWrite()
        } else {
            let up = slaves.filter { $0.engine != nil }
            if !up.isEmpty { slaveWrite(rng.pick(up)) }
        }
        clock.schedule(after: rng.int(writeGap)) { [unowned self] in self.writeTick() }
    }

    private func slaveWrite(_ s: SlaveNode) {
        let recent = s.recent.filter { clock.now - $0.at <= 5000 }
        if !recent.isEmpty, rng.chance(clientRetryChance) {
            let r = rng.pick(recent)
            stats.clientRetries += 1
            clientRetried.insert(r.opId)
            submit(s, r.message, opId: r.opId, retry: true)
            return
        }
        let message = makeMessage { [s] key in s.store.shownOrder(key) }
        submit(s, message, opId: rng.uuid(), retry: false)
    }

    /// One call of the slave's local API, checked at once.
    func submit(_ s: SlaveNode, _ message: OperationMessage, opId: String, retry: Bool) {
        guard let e = s.engine else { return }
        stats.writes += 1
        let (result, actions) = e.localWrite(message, opId: opId, now: slaveNow(s))
        trace.add(
            clock.now, s.tag, retry ? "write (retry)" : "write",
            "op \(opId) \(message.operation) changes \(result.changes.count) errors \(result.errors.count) "
                + "failure \(result.failure.map { "\($0)" } ?? "-")")
        s.recent.append((clock.now, opId, message))
        if s.recent.count > 8 { s.recent.removeFirst() }
        if let f = result.failure {
            stats.localFailures += 1
            if case .storage = f, clientRetryChance > 0, rng.chance(0.6) {
                // The POS app got an error and tries again with the same operation id.
                let inc = s.incarnation
                clock.schedule(after: rng.int(Int64(100)...1000)) { [unowned self] in
                    guard s.incarnation == inc, self.faultsOn else { return }
                    self.stats.clientRetries += 1
                    self.submit(s, message, opId: opId, retry: true)
                }
            }
        } else if !result.changes.isEmpty {
            stats.acknowledged += 1
            checker.acknowledged(self, s, opId: opId, changes: result.changes)
        }
        performSlave(s, actions)
        checker.checkOutboxVisible(self, s)
    }

    private func masterWrite() {
        guard let e = master.engine else { return }
        let message0 = makeMessage { [master] key in master.store.shownOrder(key) }
        var message = message0
        message.opId = rng.uuid()
        stats.writes += 1
        if config.mutation == .skipJournalEntry, stats.masterWrites % 4 == 3 {
            // The engine forgets a sequence number: its next entry leaves a hole in the journal.
            e.lastSeq += 1
        }
        let (outcome, actions) = e.localWrite(message, origin: "office (local API)", now: masterNow)
        trace.add(
            clock.now, "m", "write",
            "op \(message.opId ?? "-") \(message.operation) seq \(outcome.seq.map(String.init) ?? "nil") "
                + "errors \(outcome.errors.count)")
        if outcome.seq != nil, !outcome.isRepeat {
            stats.acknowledged += 1
            stats.masterWrites += 1
            checker.masterAcknowledged(self, outcome)
        }
        performMaster(actions)
    }
}
