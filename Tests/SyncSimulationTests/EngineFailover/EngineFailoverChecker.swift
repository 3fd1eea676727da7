import OrderStore

@testable import SyncCore

/// What an engine failover run did, summed over seeds.
struct EngineFailoverStats {
    var seeds = 0
    var writes = 0
    /// Operations a slave's local API acknowledged (in its outbox).
    var slaveAcknowledged = 0
    /// Master local API writes answered once a standby held them, and answered
    /// `"replicated": false` (no standby, deadline, or the master stepped down meanwhile).
    var replicated = 0
    var unreplicated = 0
    /// Unreplicated writes lost with their master's disk (as documented).
    var unreplicatedLost = 0
    /// Acknowledged operations the checker looked for at the end of settled runs.
    var checked = 0
    var promotions = 0
    var promoted = 0
    var withdrawals = 0
    var forcedPromotions = 0
    var twoAtOnce = 0
    var fetches = 0
    var fetchedEntries = 0
    var stepDowns = 0
    var divergedSlaves = 0
    var requeued = 0
    var ownOutboxApplied = 0
    var rogueIgnored = 0
    var snapshots = 0
    /// Journal entries standbys kept below a snapshot's base (Docs/PROTOCOL.md 7.19).
    var keptBelowBase = 0
    var connections = 0
    var cuts = 0
    var messages = 0
    var crashes = 0
    var virtualMillis: Int64 = 0
    var highestTerm: Int64 = 0

    mutating func add(_ o: EngineFailoverStats) {
        seeds += o.seeds
        writes += o.writes
        slaveAcknowledged += o.slaveAcknowledged
        replicated += o.replicated
        unreplicated += o.unreplicated
        unreplicatedLost += o.unreplicatedLost
        checked += o.checked
        promotions += o.promotions
        promoted += o.promoted
        withdrawals += o.withdrawals
        forcedPromotions += o.forcedPromotions
        twoAtOnce += o.twoAtOnce
        fetches += o.fetches
        fetchedEntries += o.fetchedEntries
        stepDowns += o.stepDowns
        divergedSlaves += o.divergedSlaves
        requeued += o.requeued
        ownOutboxApplied += o.ownOutboxApplied
        rogueIgnored += o.rogueIgnored
        snapshots += o.snapshots
        keptBelowBase += o.keptBelowBase
        connections += o.connections
        cuts += o.cuts
        messages += o.messages
        crashes += o.crashes
        virtualMillis += o.virtualMillis
        highestTerm = max(highestTerm, o.highestTerm)
    }

    var summary: String {
        "engine failover: \(seeds) seeds, \(writes) writes; acknowledged: \(slaveAcknowledged) by slaves, \(replicated) master "
            + "writes held by a standby, \(unreplicated) answered unreplicated (\(unreplicatedLost) lost with their master's "
            + "disk); \(checked) acknowledged operations checked; \(promotions) promotions asked, \(promoted) promoted, "
            + "\(withdrawals) withdrawn, \(forcedPromotions) forced, \(twoAtOnce) two at once; \(fetches) tails fetched "
            + "(\(fetchedEntries) entries), \(stepDowns) step-downs, \(divergedSlaves) slaves told diverged, \(requeued) "
            + "entries re-queued, \(ownOutboxApplied) own-outbox entries applied by promoted nodes; \(rogueIgnored) rogue "
            + "announcements ignored; "
            + "highest term \(highestTerm); \(snapshots) snapshots (\(keptBelowBase) entries kept below their base), \(connections) connections, "
            + "\(cuts) cuts, \(crashes) crashes, \(messages) messages; \(virtualMillis / 1000) virtual s"
    }
}

/// The invariants of an engine failover run (issue 26, item 6): nothing acknowledged lost,
/// nothing applied twice, at most one master per term, promoted never behind a voter that
/// promised it (unless forced), the rogue never followed, and every node converging on one
/// master with the same orders.
final class EngineFailoverChecker {
    private(set) var violations: [FailoverViolation] = []
    /// Operations acknowledged to a POS app: op id, node, and whether a second disk held it then.
    private var acknowledgedOps: [(opId: String, node: Int, replicated: Bool)] = []
    /// Operations some master answered without applying (refused, or nothing to change).
    private var answeredUnapplied: Set<String> = []
    /// Where masters applied each operation: seq and term (from their journals when they
    /// answered it, or from their local API's outcome).
    private var appliedAt: [String: Set<LogPosition>] = [:]
    /// The one master of each term.
    private var termMasters = TermMasters()
    /// Nodes whose disk died.
    var destroyed: Set<Int> = []

    func fail(_ sim: EngineFailoverSimulation, _ invariant: String, _ detail: String) {
        violations.append(
            FailoverViolation(invariant: invariant, time: sim.clock.now, detail: detail, trace: sim.trace.tail(sim.config.traceLines)))
    }

    func acknowledged(_ opId: String, by n: EngineFailoverNode, replicated: Bool) {
        acknowledgedOps.append((opId, n.index, replicated))
    }

    /// A master applied `opId` at `seq` in `term`.
    func applied(_ opId: String, seq: Int64, term: Int64) {
        appliedAt[opId, default: []].insert(LogPosition(lastSeq: seq, lastTerm: term))
    }

    /// A slave engine was answered for `opId` without a seq: refused, or nothing to change.
    func answeredUnapplied(_ opId: String) { answeredUnapplied.insert(opId) }

    /// `n` answered or acknowledged something as master of `term`, or became its master.
    func claim(_ sim: EngineFailoverSimulation, term: Int64, by n: EngineFailoverNode, _ what: String) {
        let ballots = sim.config.mutation != .grantEveryPromise
        for problem in termMasters.claim(term: term, by: n.index, number: n.memberNumber, ballots: ballots, tag: n.tag, what) {
            fail(sim, "one master per term", problem)
        }
        sim.stats.highestTerm = max(sim.stats.highestTerm, term)
    }

    /// At the end of a settled run, on the one master `m`: each operation once in its history,
    /// every acknowledged one there (or answered unapplied, or refused as recorded), and every
    /// node holding the same orders. Its history is its journal and, below the journal (a
    /// snapshot's base), the entries of the terms its term starts name: an operation some master
    /// applied at seq S in term T is there when the history's entry at S is of term T (one
    /// master per term appends each seq once).
    func finish(_ sim: EngineFailoverSimulation, settled: Bool) {
        sim.stats.seeds = 1
        guard settled, let m = sim.nodes.first(where: { $0.master != nil }), let db = m.db else { return }
        let journal: [JournalEntry]
        let starts: TermStarts
        let lastSeq: Int64
        do {
            journal = try db.journal(since: 0, orderUUID: nil, limit: Int.max)
            starts = try db.termStarts()
            lastSeq = try db.lastJournalSeq()
        } catch {
            return fail(sim, "store", "\(m.tag)'s journal is unreadable: \(error)")
        }
        var seqsOf: [String: Set<Int64>] = [:]
        var createdBy: [String: Int64] = [:]
        let bySeq = Dictionary(journal.map { ($0.seq, $0) }, uniquingKeysWith: { a, _ in a })
        for e in journal {
            if let id = e.opId { seqsOf[id, default: []].insert(e.seq) }
            guard e.operation == .create else { continue }
            for u in e.orderUUIDs.map({ $0.lowercased() }) {
                if let first = createdBy[u] { fail(sim, "applied twice", "order \(u) created by seq \(first) and \(e.seq)") }
                createdBy[u] = e.seq
            }
        }
        // Applied below the journal: at a seq of the history whose term is the one applied in.
        for (id, positions) in appliedAt {
            for p in positions where p.lastSeq <= lastSeq && bySeq[p.lastSeq] == nil && starts.term(ofSeq: p.lastSeq) == p.lastTerm {
                seqsOf[id, default: []].insert(p.lastSeq)
            }
        }
        // A repeat is recognised by the journal, or below it (a node promoted from a snapshot)
        // by the operation ids the snapshot carried: any second place is a failure.
        for (id, seqs) in seqsOf.sorted(by: { $0.key < $1.key }) where seqs.count > 1 {
            fail(sim, "applied twice", "op \(id) is at seqs \(seqs.sorted()) of \(m.tag)'s history")
        }
        for a in acknowledgedOps {
            sim.stats.checked += 1
            if seqsOf[a.opId] != nil || answeredUnapplied.contains(a.opId) { continue }
            if let refusals = try? db.rejections(opId: a.opId), refusals.contains(where: { $0.code != .storageFailed }) { continue }
            if !a.replicated && destroyed.contains(a.node) {
                sim.stats.unreplicatedLost += 1
                continue
            }
            let at = (appliedAt[a.opId] ?? []).sorted { $0 < $1 }.map(\.description).joined(separator: ", ")
            fail(
                sim, "acknowledged write lost",
                "op \(a.opId) (acknowledged by n\(a.node), applied at [\(at)]) is not in \(m.tag)'s history (\(starts.starts), last \(lastSeq)), nor refused"
            )
        }
        let truth = SimChecker.stateHash(m.orders)
        for n in sim.nodes where n !== m && n.isUp {
            let hash = SimChecker.stateHash(n.orders)
            if hash != truth {
                fail(sim, "convergence", "\(n.tag)'s orders differ from \(m.tag)'s (\(hash.prefix(8)) vs \(truth.prefix(8)))")
            }
        }
    }
}
