@testable import SyncCore

/// A broken invariant of a failover run.
struct FailoverViolation {
    var invariant: String
    var time: Int64
    var detail: String
    var trace: [String]
}

/// What a failover run did, summed over seeds.
struct FailoverStats {
    var seeds = 0
    var writes = 0
    var acknowledged = 0
    var replicated = 0
    var unreplicated = 0
    var unreplicatedLost = 0
    var promotions = 0
    var promoted = 0
    var withdrawals = 0
    var forcedRequests = 0
    var forced = 0
    var forcedPromotions = 0
    var twoAtOnce = 0
    var fetches = 0
    var stepDowns = 0
    var diverged = 0
    var rogueIgnored = 0
    var connections = 0
    var cuts = 0
    var messages = 0
    var virtualMillis: Int64 = 0
    var highestTerm: Int64 = 0

    mutating func add(_ o: FailoverStats) {
        seeds += o.seeds
        writes += o.writes
        acknowledged += o.acknowledged
        replicated += o.replicated
        unreplicated += o.unreplicated
        unreplicatedLost += o.unreplicatedLost
        promotions += o.promotions
        promoted += o.promoted
        withdrawals += o.withdrawals
        forcedRequests += o.forcedRequests
        forced += o.forced
        forcedPromotions += o.forcedPromotions
        twoAtOnce += o.twoAtOnce
        fetches += o.fetches
        stepDowns += o.stepDowns
        diverged += o.diverged
        rogueIgnored += o.rogueIgnored
        connections += o.connections
        cuts += o.cuts
        messages += o.messages
        virtualMillis += o.virtualMillis
        highestTerm = max(highestTerm, o.highestTerm)
    }

    var summary: String {
        "failover: \(seeds) seeds, \(writes) writes, \(acknowledged) acknowledged (\(replicated) master writes held by a standby, "
            + "\(unreplicated) unreplicated, \(unreplicatedLost) of them lost with their master's disk); \(promotions) promotions "
            + "asked, \(promoted) promoted, \(withdrawals) withdrawn, \(forcedPromotions) forced, \(twoAtOnce) two at once; "
            + "\(fetches) tails fetched, \(stepDowns) step-downs, \(diverged) entries re-queued after diverged, "
            + "\(rogueIgnored) rogue announcements ignored; highest term \(highestTerm); \(connections) connections, "
            + "\(cuts) cuts, \(messages) messages; \(virtualMillis / 1000) virtual s"
    }
}

/// What one failover run produced.
struct FailoverOutcome {
    var seed: UInt64
    var violations: [FailoverViolation]
    var stats: FailoverStats
    var trace: [String]
}

/// The failover run's invariants: nothing acknowledged lost, nothing applied twice, at most one
/// master (acknowledging or not) per term, a rogue never followed.
final class FailoverChecker {
    private(set) var violations: [FailoverViolation] = []
    /// Operation ids acknowledged to a POS app, with the node that did and whether a second
    /// disk held it then.
    private var acknowledgedOps: [(opId: String, node: Int, replicated: Bool)] = []
    /// The one master of each term.
    private var termMasters = TermMasters()
    /// Nodes whose disk died.
    var destroyed: Set<Int> = []

    func fail(_ sim: FailoverSimulation, _ invariant: String, _ detail: String) {
        violations.append(
            FailoverViolation(invariant: invariant, time: sim.clock.now, detail: detail, trace: sim.trace.tail(sim.config.traceLines)))
    }

    func acknowledged(_ opId: String, by n: FailoverNode, replicated: Bool) {
        acknowledgedOps.append((opId, n.index, replicated))
    }

    /// `n` answered for `opId` as master of `term`.
    func masterAcknowledged(_ sim: FailoverSimulation, node n: FailoverNode, term: Int64, opId: String) {
        claim(sim, term: term, by: n, "acknowledged \(opId)")
    }

    /// `n` became master of `term`.
    func becameMaster(_ sim: FailoverSimulation, node n: FailoverNode, term: Int64) {
        claim(sim, term: term, by: n, "became master")
    }

    private func claim(_ sim: FailoverSimulation, term: Int64, by n: FailoverNode, _ what: String) {
        let ballots = sim.config.mutation != .grantEveryPromise
        for problem in termMasters.claim(term: term, by: n.index, number: n.memberNumber, ballots: ballots, tag: n.tag, what) {
            fail(sim, "one master per term", problem)
        }
        sim.stats.highestTerm = max(sim.stats.highestTerm, term)
    }

    /// At the end of a settled run: every acknowledged operation once in the master's journal.
    func finish(_ sim: FailoverSimulation, settled: Bool) {
        sim.stats.seeds = 1
        sim.stats.acknowledged = acknowledgedOps.count
        guard settled, let m = sim.nodes.first(where: { $0.role == .master }) else { return }
        var count: [String: Int] = [:]
        for e in m.journal { count[e.opId, default: 0] += 1 }
        for (opId, n) in count where n > 1 {
            fail(sim, "applied twice", "\(opId) is \(n) times in \(m.tag)'s journal")
        }
        // Each POS app's writes are applied in the order it made them.
        var last: [String: (k: Int, seq: Int64)] = [:]
        for e in m.journal {
            guard let dash = e.opId.lastIndex(of: "-"), let k = Int(e.opId[e.opId.index(after: dash)...]) else { continue }
            let origin = String(e.opId[..<dash])
            if let before = last[origin], before.k > k {
                fail(sim, "per-terminal order", "\(e.opId) at seq \(e.seq) after \(origin)-\(before.k) at seq \(before.seq)")
                break
            }
            last[origin] = (k, e.seq)
        }
        for a in acknowledgedOps where count[a.opId] == nil {
            if !a.replicated && destroyed.contains(a.node) {
                sim.stats.unreplicatedLost += 1
                continue
            }
            fail(sim, "acknowledged write lost", "\(a.opId) (acknowledged by n\(a.node)) is not in \(m.tag)'s journal")
        }
    }
}
