import JSON
import SyncCore

/// A broken invariant.
struct SimViolation {
    var invariant: String
    var detail: String
    var time: Int64
    /// The last trace lines when it was found.
    var trace: [String]
}

/// The invariants of a run: checked as it goes (read-your-writes) and at the end (no
/// acknowledged write lost, nothing applied twice, gapless journal, each slave's applied
/// sequence gapless and never going back, every replica equal to the master's).
final class SimChecker {
    private(set) var violations: [SimViolation] = []

    private struct Acked {
        var slave: Int
        var opId: String
        var time: Int64
        /// The orders of the operation as queued (lower-case keys).
        var keys: [String]
    }

    /// A newest outbox entry whose change the slave did not show. It stands unless the master
    /// refused that operation, or applied it and the slave had already seen a later change to
    /// the same order (the master's truth then overrides the terminal's write).
    private struct Provisional {
        var slave: Int
        var opId: String
        var key: String
        var lastSeq: Int64
        var time: Int64
        var detail: String
        var trace: [String]
    }

    /// What an outbox entry says the replica shows for one order.
    private enum Expectation {
        case present(JSONObject)
        case absent

        func problem(with actual: Order?) -> String? {
            switch self {
            case .absent:
                return actual == nil ? nil : "removed here but still shown"
            case .present(let fields):
                guard let o = actual else { return "written here but not shown" }
                let json = o.json
                for (k, v) in fields.members where k != "uuid" && k != "version" && k != "created" {
                    let got = json[k]
                    if v == .null {
                        if k == "customerName" ? got == .string("") : got == nil { continue }
                    } else if got == v {
                        continue
                    }
                    return "\(k) is \(got?.serialized() ?? "absent") instead of \(v.serialized())"
                }
                return nil
            }
        }
    }

    private var acked: [Acked] = []
    /// Operations the master answered as harmless repeats (nothing applied, nothing refused),
    /// with its sequence then.
    private var unchanged: [String: Int64] = [:]
    /// The most orders any `result` for an operation called harmless repeats.
    private var unchangedCount: [String: Int] = [:]
    /// Every sequence number the master's `result`s gave an operation, by operation id (one
    /// operation applied once has one).
    private var answeredSeqs: [String: Set<Int64>] = [:]
    private var provisional: [Provisional] = []
    private var provisionalSeen: Set<String> = []
    private var expectations: [String: [String: Expectation]] = [:]

    /// Records a broken invariant with the trace that led to it.
    func fail(_ sim: Simulation, _ invariant: String, _ detail: String) {
        violations.append(
            SimViolation(invariant: invariant, detail: detail, time: sim.clock.now, trace: sim.trace.tail(sim.config.traceLines)))
    }

    // MARK: As the run goes

    /// A slave's local API answered a write as done: its replica shows it now.
    func acknowledged(_ sim: Simulation, _ s: SlaveNode, opId: String, changes: [OrderChange]) {
        let entry = s.engine?.outbox.last { $0.opId == opId }
        acked.append(Acked(slave: s.index, opId: opId, time: sim.clock.now, keys: entry.map { expectation($0).keys.sorted() } ?? []))
        for change in changes {
            let shown = s.store.shownOrder(change.order.key)
            switch change {
            case .insert(let o), .update(let o):
                if shown != o {
                    fail(sim, "read-your-writes", "\(s.tag) acknowledged op \(opId) but shows \(describe(shown)) instead of \(describe(o))")
                }
            case .delete(let o):
                if shown != nil { fail(sim, "read-your-writes", "\(s.tag) acknowledged removing \(o.key) (op \(opId)) but still shows it") }
            }
        }
    }

    /// The master's local API applied a write: its store shows it.
    func masterAcknowledged(_ sim: Simulation, _ outcome: ApplyOutcome) {
        for o in outcome.applied {
            let shown = sim.master.store.shownOrder(o.key)
            if outcome.operation == .remove ? shown != nil : shown != o {
                fail(sim, "read-your-writes", "the master applied seq \(outcome.seq ?? 0) but shows \(describe(shown)) for \(o.key)")
            }
        }
    }

    /// The master sent a `result`: one with nothing applied and nothing refused answers the
    /// operation as a harmless repeat.
    func masterAnswered(_ sim: Simulation, _ text: String) {
        guard case .success(.result(let opId, let seq, _, let same, let failed)) = ServerMessage.decode(text) else { return }
        unchangedCount[opId] = max(unchangedCount[opId] ?? 0, same)
        if let s = seq { answeredSeqs[opId, default: []].insert(s) }
        guard seq == nil, same > 0, failed == 0, unchanged[opId] == nil else { return }
        unchanged[opId] = sim.master.engine?.lastSeq ?? 0
    }

    /// For every order with changes waiting in the slave's outbox, the newest such change is
    /// what the replica shows.
    func checkOutboxVisible(_ sim: Simulation, _ s: SlaveNode) {
        guard let e = s.engine, !e.outbox.isEmpty else { return }
        var newest: [String: Int] = [:]
        for (i, entry) in e.outbox.enumerated() {
            for k in entry.orderKeys { newest[k] = i }
        }
        for k in newest.keys.sorted() {
            guard let i = newest[k] else { continue }
            let entry = e.outbox[i]
            guard let expected = expectation(entry)[k], let problem = expected.problem(with: s.store.shownOrder(k)) else { continue }
            guard provisionalSeen.insert("\(s.index) \(entry.opId) \(k)").inserted else { continue }
            provisional.append(
                Provisional(
                    slave: s.index, opId: entry.opId, key: k, lastSeq: e.lastSeq, time: sim.clock.now,
                    detail: "\(s.tag) has op \(entry.opId) waiting in its outbox for \(k): \(problem)",
                    trace: provisional.count < 3 ? sim.trace.tail(sim.config.traceLines) : []))
        }
    }

    private func expectation(_ entry: OutboxEntry) -> [String: Expectation] {
        if let known = expectations[entry.opId] { return known }
        var out: [String: Expectation] = [:]
        if case .success(.operation(let m)) = ClientMessage.decode(entry.message) {
            for raw in m.orders {
                guard let o = raw.objectValue, let u = o["uuid"]?.stringValue else { continue }
                out[u.lowercased()] = m.operation == .remove ? .absent : .present(o)
            }
        }
        expectations[entry.opId] = out
        return out
    }

    // MARK: At the end

    /// The invariants over the whole run. The safety ones (journal, order, applied sequence) hold
    /// at any moment; the others need a run that settled.
    func finish(_ sim: Simulation, settled: Bool) {
        let history = sim.master.store.history
        // Operation ids the master applied again after compacting their first entry. Retention
        // allows that only past both horizons (PROTOCOL.md 4.6): the two entries more than
        // `journalKeepNewest` apart and more than `journalKeepMillis` apart by the master's clock,
        // which in a run of minutes only a clock jump (`SimClockJump.swift`) brings.
        let compacted = Set(sim.master.store.reappliedAfterCompaction)
        var allowed: Set<String> = []
        var firstOf: [String: JournalEntry] = [:]
        var createdBy: [String: Int64] = [:]
        var touching: [String: [Int64]] = [:]
        for (i, entry) in history.enumerated() {
            if entry.seq != Int64(i + 1) {
                fail(sim, "journal gapless", "journal entry \(i + 1) has seq \(entry.seq)")
                break
            }
            let retention = entry.opId.map { compacted.contains($0) } ?? false
            if let id = entry.opId {
                if let first = firstOf[id] {
                    let apart = entry.seq - first.seq
                    let age = entry.recordedAtMillis - first.recordedAtMillis
                    if retention, apart > Simulation.journalKeepNewest, age > Simulation.journalKeepMillis {
                        sim.stats.reappliedAfterCompaction += 1
                        allowed.insert(id)
                    } else {
                        fail(
                            sim, "applied twice",
                            "op \(id) is journal entries \(first.seq) and \(entry.seq), \(apart) entries and \(age) ms apart "
                                + "(the master keeps the newest \(Simulation.journalKeepNewest) and \(Simulation.journalKeepMillis) ms)")
                    }
                } else {
                    firstOf[id] = entry
                }
            }
            for u in entry.orderUUIDs {
                let k = u.lowercased()
                touching[k, default: []].append(entry.seq)
                if entry.operation == .create, !retention {
                    if let first = createdBy[k] { fail(sim, "applied twice", "order \(k) created by seq \(first) and \(entry.seq)") }
                    createdBy[k] = entry.seq
                }
            }
        }
        let seqOf = firstOf.mapValues(\.seq)
        // The master's answers tell the same: an operation id answered with two sequence numbers
        // was applied twice, whatever the journal kept.
        for id in answeredSeqs.keys.sorted() {
            guard let seqs = answeredSeqs[id], seqs.count > 1, !allowed.contains(id) else { continue }
            fail(sim, "applied twice", "op \(id) was answered with seqs \(seqs.sorted().map(String.init).joined(separator: " and "))")
        }
        let rows = sim.master.store.journalRows.map(\.seq)
        if rows.count < history.count { sim.stats.compactedRuns += 1 }
        if rows != history.suffix(rows.count).map(\.seq) {
            fail(sim, "journal gapless", "the journal is not the newest part of what was appended")
        }
        // Each standby's journal is the master's, entry for entry (`Docs/PROTOCOL.md` 7.2): the same
        // operation, orders, op id and term at each seq (the bytes of one re-encoded from parts may differ).
        let bySeq = Dictionary(history.map { ($0.seq, $0) }, uniquingKeysWith: { first, _ in first })
        for (i, s) in sim.slaves.enumerated() {
            guard let copy = s.store as? InMemorySlaveStore else { continue }
            for e in copy.journal {
                // An entry at or below the snapshot's base was kept through it for `diverged` to
                // re-queue (7.19): a write of this slave's own is kept as it sent it (no versions,
                // and orders the master refused still in it, for the next master to judge), so only
                // what a re-queue and a repeat's recognition read must be the master's.
                let kept = copy.standbyBase.map { e.seq <= $0 } ?? false
                func keys(_ j: JournalEntry) -> Set<String> { Set(j.orderUUIDs.map { $0.lowercased() }) }
                guard let m = bySeq[e.seq], m.term == e.term, m.opId == e.opId,
                    kept
                        ? (m.operation == e.operation && keys(m).isSubset(of: keys(e)))
                        : ServerMessage.decode(m.message) == ServerMessage.decode(e.message)
                else {
                    fail(sim, "standby copy", "s\(i) journal entry \(e.seq) is not the master's")
                    break
                }
            }
        }

        func refused(_ opId: String, _ slave: Int?) -> Bool {
            if sim.master.store.recordedRejections(opId: opId).contains(where: { $0.code != .storageFailed }) { return true }
            // The master refused it and told the slave, but could not record it (injected failure).
            guard let i = slave else { return false }
            return sim.slaves[i].store.recordedRejections(opId: opId).contains { $0.origin == "master" && $0.code != .storageFailed }
        }

        for a in acked where settled && seqOf[a.opId] == nil && unchanged[a.opId] == nil && !refused(a.opId, a.slave) {
            fail(
                sim, "acknowledged write lost",
                "s\(a.slave) acknowledged op \(a.opId) at t=\(a.time): not in the master's journal, "
                    + "and not refused")
        }

        // Every order of an applied operation is accounted for: applied (in its journal entry),
        // refused (recorded, or told to the slave), or answered as a harmless repeat.
        var accounted: Set<String> = []
        for a in acked where settled && accounted.insert(a.opId).inserted {
            guard let seq = seqOf[a.opId], let entry = history.first(where: { $0.seq == seq }) else { continue }
            var known = Set(entry.orderUUIDs.map { $0.lowercased() })
            let refusals =
                sim.master.store.recordedRejections(opId: a.opId) + sim.master.store.lostRejections
                + sim.slaves[a.slave].store.recordedRejections(opId: a.opId).filter { $0.origin == "master" }
            for r in refusals where r.opId == a.opId && r.code != .storageFailed {
                if let u = r.orderUUID { known.insert(u.lowercased()) }
            }
            let missing = a.keys.filter { !known.contains($0) }
            if missing.count > unchangedCount[a.opId] ?? 0 {
                fail(
                    sim, "every order answered",
                    "s\(a.slave) op \(a.opId) (journal seq \(seq)): the master neither applied, refused "
                        + "nor reported unchanged its change to \(missing.joined(separator: ", ")); " + Self.history(of: a.opId, sim))
            }
        }

        // A terminal's operations are applied in the order its local API acknowledged them.
        for s in sim.slaves {
            var seen: Set<String> = []
            var before: (opId: String, seq: Int64)?
            for a in acked where a.slave == s.index && seen.insert(a.opId).inserted {
                guard let seq = seqOf[a.opId] else { continue }
                if let b = before, b.seq > seq {
                    fail(
                        sim, "per-terminal order",
                        "\(s.tag) acknowledged op \(b.opId) before op \(a.opId), but the master applied them "
                            + "as seq \(b.seq) and \(seq); " + Self.history(of: b.opId, sim))
                    break
                }
                before = (a.opId, seq)
            }
        }

        for s in sim.slaves {
            var last: Int64 = 0
            for (n, applied) in s.store.appliedLog.enumerated() {
                if applied.snapshot ? applied.seq < last : applied.seq != last + 1 {
                    fail(
                        sim, "applied sequence",
                        "\(s.tag) commit \(n) set seq \(applied.seq)\(applied.snapshot ? " (snapshot)" : "") after \(last)")
                    break
                }
                last = applied.seq
            }
        }

        for problem in sim.master.store.readFailures {
            fail(sim, "store", "the master's store: \(problem)")
        }
        for s in sim.slaves {
            for problem in s.store.readFailures { fail(sim, "store", "\(s.tag)'s store: \(problem)") }
        }

        guard settled else { return }
        for p in provisional {
            if refused(p.opId, p.slave) {
                sim.stats.provisionalDiscarded += 1
                continue
            }
            // The master's entry for the operation does not carry this order: refused (a refusal
            // the master could not record, heard by nobody) or a harmless repeat.
            if let applied = seqOf[p.opId], let entry = history.first(where: { $0.seq == applied }),
                !entry.orderUUIDs.contains(where: { $0.lowercased() == p.key })
            {
                sim.stats.provisionalDiscarded += 1
                continue
            }
            if let applied = seqOf[p.opId] ?? unchanged[p.opId],
                touching[p.key, default: []].contains(where: { $0 > applied && $0 <= p.lastSeq })
            {
                sim.stats.provisionalDiscarded += 1
                continue
            }
            let where_ = seqOf[p.opId].map { "applied by the master as seq \($0)" } ?? "not applied by the master"
            violations.append(
                SimViolation(
                    invariant: "read-your-writes", detail: "\(p.detail) (at replica seq \(p.lastSeq); \(where_))",
                    time: p.time, trace: p.trace))
        }

        let truth = canonical(sim.master.store.orders)
        for s in sim.slaves {
            let replica = canonical(s.store.orders)
            if !replica.elementsEqual(truth, by: { $0.0 == $1.0 && $0.1 == $1.1 }) {
                fail(
                    sim, "convergence",
                    "\(s.tag) differs from the master (hash \(Self.stateHash(s.store.orders)) vs "
                        + "\(Self.stateHash(sim.master.store.orders))):\n" + diff(truth, replica))
            }
        }
    }

    /// What the master recorded about an operation: its journal entry and its refusals.
    static func history(of opId: String, _ sim: Simulation) -> String {
        let seq = sim.master.store.history.first { $0.opId == opId }?.seq
        let codes = sim.master.store.recordedRejections(opId: opId).map(\.code.rawValue)
        return "op \(opId.prefix(8)): journal seq \(seq.map(String.init) ?? "none"), refusals recorded [\(codes.joined(separator: ","))]"
    }

    private func canonical(_ orders: [String: Order]) -> [(String, String)] {
        orders.keys.sorted().map { ($0, JSONValue.object(orders[$0]!.json).serialized()) }
    }

    /// Hash of the canonical form of a replica: every order, sorted by key, with every field.
    static func stateHash(_ orders: [String: Order]) -> String {
        var h = StableHash()
        for k in orders.keys.sorted() {
            h.add(JSONValue.object(orders[k]!.json).serialized())
            h.add("\n")
        }
        return h.hex
    }

    private func diff(_ a: [(String, String)], _ b: [(String, String)]) -> String {
        let x = Dictionary(uniqueKeysWithValues: a)
        let y = Dictionary(uniqueKeysWithValues: b)
        var lines: [String] = []
        for k in Set(x.keys).union(y.keys).sorted() where x[k] != y[k] {
            lines.append("  \(k):\n    master: \(x[k] ?? "absent")\n    slave:  \(y[k] ?? "absent")")
        }
        return lines.prefix(10).joined(separator: "\n")
    }

    private func describe(_ o: Order?) -> String {
        o.map { JSONValue.object($0.json).serialized() } ?? "nothing"
    }
}
