import Foundation
import XCTest

/// The promotion model (`FailoverSimulation`) over many seeds, and its checker's self-checks.
/// `ORDERSYNC_FAILOVER_SEEDS=N` (default 1000), `ORDERSYNC_FAILOVER_SEED=S` runs seed S alone
/// and prints its trace.
final class FailoverSimulationTests: XCTestCase {
    static func seeds() -> [UInt64] {
        let env = ProcessInfo.processInfo.environment
        if let one = env["ORDERSYNC_FAILOVER_SEED"].flatMap({ UInt64($0) }) { return [one] }
        let n = env["ORDERSYNC_FAILOVER_SEEDS"].flatMap { Int($0) } ?? 1000
        return (1...UInt64(max(1, n))).map { $0 }
    }

    static func report(_ o: FailoverOutcome) -> String {
        guard let v = o.violations.first else { return "seed \(o.seed): ok" }
        return
            (["FAILOVER FAILURE seed=\(o.seed) invariant=\(v.invariant) at t=\(v.time) ms", "  \(v.detail)"]
            + v.trace.map { "    " + $0 }
            + ["  reproduce: ORDERSYNC_FAILOVER_SEED=\(o.seed) swift test --filter FailoverSimulationTests"])
            .joined(separator: "\n")
    }

    func testThousandFailoverSeeds() {
        let seeds = Self.seeds()
        let started = Date()
        var total = FailoverStats()
        var failed: [FailoverOutcome] = []
        for seed in seeds {
            var config = FailoverConfig(seed: seed)
            // ORDERSYNC_FAILOVER_MUTATION=<name>: run with a deliberate bug (FailoverMutation).
            config.mutation = ProcessInfo.processInfo.environment["ORDERSYNC_FAILOVER_MUTATION"].flatMap { FailoverMutation(rawValue: $0) }
            config.traceLines = ProcessInfo.processInfo.environment["ORDERSYNC_FAILOVER_TRACE"].flatMap { Int($0) } ?? 60
            let o = FailoverSimulation(config).run()
            total.add(o.stats)
            if !o.violations.isEmpty {
                failed.append(o)
                if failed.count <= 3 { print(Self.report(o)) }
            } else if seeds.count == 1 {
                print(o.trace.joined(separator: "\n"))
            }
        }
        print("failover simulation: \(seeds.count) seeds in \(Int(Date().timeIntervalSince(started) * 1000)) ms, \(failed.count) failed")
        print(total.summary)
        XCTAssertTrue(failed.isEmpty, "failing seeds: \(failed.prefix(50).map { "\($0.seed) (\($0.violations[0].invariant))" })")
        guard seeds.count >= 100 else { return }
        // The run did what its invariants speak about (per seed, from 100 seeds up).
        let n = Double(seeds.count)
        XCTAssertGreaterThan(Double(total.promoted) / n, 0.9, "promotions")
        XCTAssertGreaterThan(Double(total.withdrawals) / n, 0.05, "withdrawn promotions")
        XCTAssertGreaterThan(Double(total.forcedPromotions) / n, 0.02, "forced promotions")
        XCTAssertGreaterThan(Double(total.twoAtOnce) / n, 0.05, "two promotions at once")
        XCTAssertGreaterThan(Double(total.fetches) / n, 0.1, "tails fetched")
        XCTAssertGreaterThan(Double(total.stepDowns) / n, 0.2, "old masters stepping down")
        XCTAssertGreaterThan(Double(total.diverged) / n, 0.2, "entries re-queued after diverged")
        XCTAssertGreaterThan(Double(total.replicated) / n, 5, "master writes held by a standby")
        XCTAssertGreaterThan(Double(total.rogueIgnored) / n, 1, "rogue announcements ignored")
    }

    /// Each deliberate bug breaks an invariant on some seed, and that seed passes without it.
    func testTheCheckerCatchesDeliberateBugs() {
        for mutation in FailoverMutation.allCases {
            var caught: FailoverOutcome?
            for seed in UInt64(1)...300 {
                var config = FailoverConfig(seed: seed)
                config.mutation = mutation
                let o = FailoverSimulation(config).run()
                if !o.violations.isEmpty {
                    caught = o
                    break
                }
            }
            guard let o = caught else {
                XCTFail("\(mutation) broke nothing in seeds 1-300")
                continue
            }
            print("failover self-check: \(mutation) caught on seed \(o.seed) by \(o.violations[0].invariant): \(o.violations[0].detail)")
            XCTAssertTrue(FailoverSimulation(FailoverConfig(seed: o.seed)).run().violations.isEmpty, "seed \(o.seed) without \(mutation)")
        }
    }

    func testSameSeedSameRun() {
        for seed in UInt64(1)...5 {
            let a = FailoverSimulation(FailoverConfig(seed: seed)).run()
            let b = FailoverSimulation(FailoverConfig(seed: seed)).run()
            XCTAssertEqual(a.trace, b.trace, "seed \(seed)")
            XCTAssertEqual(a.stats.messages, b.stats.messages, "seed \(seed)")
        }
    }
}
