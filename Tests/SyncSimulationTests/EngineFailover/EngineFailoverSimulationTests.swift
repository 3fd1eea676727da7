import Foundation
import XCTest

/// The engine failover simulation (`EngineFailoverSimulation`) over many seeds, and its checker's
/// self-checks. `ORDERSYNC_ENGINE_FAILOVER_SEEDS=N` (default 100, as CI runs it; 10 under the
/// sanitizers; 1,000 by hand, Docs/SIMULATION.md),
/// `ORDERSYNC_ENGINE_FAILOVER_SEED=S` runs seed S alone and prints its trace,
/// `ORDERSYNC_ENGINE_FAILOVER_TRACE=L` prints L trace lines with a failure,
/// `ORDERSYNC_ENGINE_FAILOVER_MUTATION=<name>` runs with a deliberate bug.
final class EngineFailoverSimulationTests: XCTestCase {
    static var environment: [String: String] { ProcessInfo.processInfo.environment }

    static func seeds() -> [UInt64] {
        if let one = environment["ORDERSYNC_ENGINE_FAILOVER_SEED"].flatMap({ UInt64($0) }) { return [one] }
        let n = environment["ORDERSYNC_ENGINE_FAILOVER_SEEDS"].flatMap { Int($0) } ?? 100
        return (1...UInt64(max(1, n))).map { $0 }
    }

    static func report(_ o: EngineFailoverOutcome) -> String {
        guard let v = o.violations.first else { return "seed \(o.seed): ok" }
        return
            (["ENGINE FAILOVER FAILURE seed=\(o.seed) invariant=\(v.invariant) at t=\(v.time) ms", "  \(v.detail)"]
            + v.trace.map { "    " + $0 }
            + ["  reproduce: ORDERSYNC_ENGINE_FAILOVER_SEED=\(o.seed) swift test --filter EngineFailoverSimulationTests"])
            .joined(separator: "\n")
    }

    func testEngineFailoverSeeds() {
        let seeds = Self.seeds()
        let started = Date()
        var total = EngineFailoverStats()
        var failed: [EngineFailoverOutcome] = []
        for seed in seeds {
            var config = EngineFailoverConfig(seed: seed)
            config.mutation = Self.environment["ORDERSYNC_ENGINE_FAILOVER_MUTATION"].flatMap { EngineFailoverMutation(rawValue: $0) }
            config.traceLines = Self.environment["ORDERSYNC_ENGINE_FAILOVER_TRACE"].flatMap { Int($0) } ?? 60
            let o = EngineFailoverSimulation(config).run()
            total.add(o.stats)
            if !o.violations.isEmpty {
                failed.append(o)
                if failed.count <= 3 { print(Self.report(o)) }
            } else if seeds.count == 1 {
                print(o.trace.joined(separator: "\n"))
            }
        }
        print(
            "engine failover simulation: \(seeds.count) seeds in \(Int(Date().timeIntervalSince(started) * 1000)) ms, \(failed.count) failed"
        )
        print(total.summary)
        XCTAssertTrue(failed.isEmpty, "failing seeds: \(failed.prefix(50).map { "\($0.seed) (\($0.violations[0].invariant))" })")
        guard seeds.count >= 100 else { return }
        // The run did what its invariants speak about (per seed, from 100 seeds up).
        let n = Double(seeds.count)
        XCTAssertGreaterThan(Double(total.promoted) / n, 0.8, "promotions")
        XCTAssertGreaterThan(Double(total.withdrawals) / n, 0.02, "withdrawn promotions")
        XCTAssertGreaterThan(Double(total.forcedPromotions) / n, 0.01, "forced promotions")
        XCTAssertGreaterThan(Double(total.twoAtOnce) / n, 0.03, "two promotions at once")
        XCTAssertGreaterThan(Double(total.stepDowns) / n, 0.1, "old masters stepping down")
        XCTAssertGreaterThan(Double(total.requeued) / n, 0.1, "entries re-queued after diverged")
        XCTAssertGreaterThan(Double(total.replicated) / n, 3, "master writes held by a standby")
        XCTAssertGreaterThan(Double(total.checked) / n, 20, "acknowledged operations checked")
    }

    /// Each deliberate bug breaks an invariant on some seed, and that seed passes without it.
    func testTheCheckerCatchesDeliberateBugs() {
        for mutation in EngineFailoverMutation.allCases {
            var caught: EngineFailoverOutcome?
            for seed in UInt64(1)...200 {
                var config = EngineFailoverConfig(seed: seed)
                config.mutation = mutation
                let o = EngineFailoverSimulation(config).run()
                if !o.violations.isEmpty {
                    caught = o
                    break
                }
            }
            guard let o = caught else {
                XCTFail("\(mutation) broke nothing in seeds 1-200")
                continue
            }
            print(
                "engine failover self-check: \(mutation) caught on seed \(o.seed) by \(o.violations[0].invariant): \(o.violations[0].detail)"
            )
            XCTAssertTrue(
                EngineFailoverSimulation(EngineFailoverConfig(seed: o.seed)).run().violations.isEmpty, "seed \(o.seed) without \(mutation)")
        }
    }

    func testSameSeedSameRun() {
        for seed in UInt64(1)...3 {
            let a = EngineFailoverSimulation(EngineFailoverConfig(seed: seed)).run()
            let b = EngineFailoverSimulation(EngineFailoverConfig(seed: seed)).run()
            XCTAssertEqual(a.trace, b.trace, "seed \(seed)")
            XCTAssertEqual(a.stats.messages, b.stats.messages, "seed \(seed)")
        }
    }
}
