import Foundation
import XCTest

/// The deterministic simulation of a whole store (see `Simulation`). Seeds 1...N run with N from
/// `ORDERSYNC_SIM_SEEDS` (default 1000), starting at `ORDERSYNC_SIM_FIRST_SEED` (default 1);
/// `ORDERSYNC_SIM_SEED=<n>` runs that seed alone.
final class SyncSimulationTests: XCTestCase {
    static func seeds() -> [UInt64] {
        let env = ProcessInfo.processInfo.environment
        if let one = env["ORDERSYNC_SIM_SEED"].flatMap({ UInt64($0) }) { return [one] }
        let n = env["ORDERSYNC_SIM_SEEDS"].flatMap { Int($0) } ?? 1000
        let first = env["ORDERSYNC_SIM_FIRST_SEED"].flatMap { UInt64($0) } ?? 1
        return (0..<UInt64(max(1, n))).map { first + $0 }
    }

    /// `ORDERSYNC_SIM_NO_FAULTS=master-disk,slave-crash,...` leaves fault kinds out.
    static func disabledFaults() -> Set<String> {
        let text = ProcessInfo.processInfo.environment["ORDERSYNC_SIM_NO_FAULTS"] ?? ""
        return Set(text.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) })
    }

    static func report(_ o: SimOutcome) -> String {
        guard let first = o.violations.first else { return "seed \(o.seed): ok" }
        var lines = [
            "SIMULATION FAILURE seed=\(o.seed) invariant=\(first.invariant) at t=\(first.time) ms",
            "  \(first.detail)",
        ]
        for v in o.violations.dropFirst().prefix(5) { lines.append("  also \(v.invariant): \(v.detail)") }
        if o.violations.count > 6 { lines.append("  ... \(o.violations.count - 6) more") }
        lines.append("  last trace lines:")
        lines += first.trace.map { "    " + $0 }
        if !o.finalTrace.isEmpty {
            lines.append("  the run to its end:")
            lines += o.finalTrace.map { "    " + $0 }
        }
        lines.append(
            "  reproduce: ORDERSYNC_SIM_SEED=\(o.seed) swift test --filter SyncSimulationTests"
                + " (add ORDERSYNC_SIM_TRACE=100000 to print the whole run)")
        return lines.joined(separator: "\n")
    }

    func testThousandSeeds() {
        let seeds = Self.seeds()
        var total = SimStats()
        var failed: [SimOutcome] = []
        let started = Date()
        // ORDERSYNC_SIM_TRACE=<lines>: print that many trace lines with a failure (default 40).
        let traceLines = ProcessInfo.processInfo.environment["ORDERSYNC_SIM_TRACE"].flatMap { Int($0) } ?? 40
        let runHash = Self.run(seeds) { config in
            config.traceLines = traceLines
            config.disabledFaults = Self.disabledFaults()
        } each: { outcome in
            var figures = outcome.stats
            figures.seeds = 1
            total.add(figures)
            if !outcome.violations.isEmpty {
                failed.append(outcome)
                if failed.count <= 3 { print(Self.report(outcome)) }
            }
        }
        let seconds = Date().timeIntervalSince(started)
        print(
            "simulation: \(seeds.count) seeds in \(Int(seconds * 1000)) ms wall clock, \(failed.count) failed, "
                + "run hash \(runHash)")
        print(total.summary)
        if !failed.isEmpty {
            let list = failed.prefix(200).map { "\($0.seed) (\($0.violations[0].invariant))" }.joined(separator: ", ")
            print("failing seeds: \(list)")
            XCTFail("\(failed.count) of \(seeds.count) seeds broke an invariant: \(list)\n" + Self.report(failed[0]))
        }
        assertMinimumVolumes(total, seeds: seeds.count)
    }

    /// The run did the work its invariants speak about: enough acknowledged writes and faults of
    /// every kind (per 1,000 seeds, scaled; checked from 20 seeds up, unless a fault kind was
    /// left out on purpose). Below 1,000 seeds a count is a small sample of a rare event (the
    /// AddressSanitizer run takes 20 seeds: 1 rejection-record failure expected), so it may fall
    /// two standard deviations (a Poisson count's: the square root) below the scaled minimum.
    private func assertMinimumVolumes(_ total: SimStats, seeds n: Int) {
        guard n >= 20 else { return }
        let off = Self.disabledFaults()
        let perThousand: [(String, Int, Int, String?)] = [
            ("writes", total.writes, 50_000, nil),
            ("acknowledged writes", total.acknowledged, 40_000, nil),
            ("acknowledged writes on the master", total.masterWrites, 3_500, nil),
            ("messages delivered", total.messages, 400_000, nil),
            ("connections", total.connections, 15_000, nil),
            ("link cuts", total.cuts, 6_000, "cut"),
            ("duplicated messages", total.duplicates, 1_500, "duplicate"),
            ("long delays", total.delays, 8_000, "delay"),
            ("master commits failed before the disk", total.masterCommitFailBefore, 800, "master-disk"),
            ("master commits failed after the disk", total.masterCommitFailAfter, 800, "master-disk-after"),
            ("rejection records failed", total.rejectionFails, 50, "records"),
            ("terminal saves failed", total.terminalSaveFails, 400, "records"),
            ("slave commits failed", total.slaveCommitFails, 2_000, "slave-disk"),
            ("master crashes", total.masterCrashes, 700, "master-crash"),
            ("slave crashes", total.slaveCrashes, 1_500, "slave-crash"),
            ("POS retries", total.clientRetries, 3_000, "client-retry"),
            ("snapshots applied", total.snapshots, 2_000, nil),
            ("clock jumps past 30 days", total.clockJumps, 400, "clock-jump"),
            ("runs whose journal was compacted", total.compactedRuns, 300, "clock-jump"),
        ]
        for (name, got, minimum, fault) in perThousand where fault.map({ !off.contains($0) }) ?? true {
            let expected = minimum * n / 1000
            let scaled = n >= 1000 ? expected : max(0, expected - Int((2 * Double(expected).squareRoot()).rounded(.up)))
            XCTAssertGreaterThanOrEqual(got, scaled, "\(n) seeds did too little: \(name) \(got), at least \(scaled) expected")
        }
    }

    /// Runs `seeds` and returns the hash of every run's trace and final state, in seed order.
    static func run(
        _ seeds: [UInt64], _ configure: (inout SimConfig) -> Void = { _ in },
        each: (SimOutcome) -> Void = { _ in }
    ) -> String {
        var runHash = StableHash()
        for seed in seeds {
            var config = SimConfig(seed: seed)
            configure(&config)
            let outcome = Simulation(config).run()
            runHash.add(outcome.traceHash)
            runHash.add(outcome.stateHash)
            each(outcome)
        }
        return runHash.hex
    }

    func testSameSeedSameRun() {
        for seed: UInt64 in [3, 17, 256, 1001] {
            var config = SimConfig(seed: seed)
            config.hashesText = true
            let a = Simulation(config).run()
            let b = Simulation(config).run()
            XCTAssertEqual(a.traceHash, b.traceHash, "seed \(seed): the trace differs between two runs")
            XCTAssertEqual(a.stateHash, b.stateHash, "seed \(seed)")
            XCTAssertEqual(a.stats.events, b.stats.events, "seed \(seed)")
            XCTAssertGreaterThan(a.stats.events, 300, "seed \(seed) did something")
            print("seed \(seed): trace \(a.traceHash), state \(a.stateHash), \(a.stats.events) events")
        }
    }

    /// Every tenth seed (all of them when fewer than ten are asked for) again on the real SQLite
    /// adapters (`SQLiteMasterStore`, `SQLiteSlaveStore`) over in-memory databases: every invariant
    /// must hold, the run must do its share of the work, and it must end with the same orders as
    /// the same seed on the in-memory stores (which claim to behave like SQLite).
    func testSeedsOnSQLite() {
        let all = Self.seeds()
        let seeds = all.count < 10 ? all : all.filter { $0 % 10 == 0 }
        var total = SimStats()
        var failed: [SimOutcome] = []
        var differing: [UInt64] = []
        let started = Date()
        for seed in seeds {
            var config = SimConfig(seed: seed)
            config.disabledFaults = Self.disabledFaults()
            config.traceLines = ProcessInfo.processInfo.environment["ORDERSYNC_SIM_TRACE"].flatMap { Int($0) } ?? 40
            let inMemory = config
            Self.useSQLite(&config)
            let outcome = Simulation(config).run()
            var figures = outcome.stats
            figures.seeds = 1
            total.add(figures)
            if !outcome.violations.isEmpty {
                failed.append(outcome)
                if failed.count <= 3 { print("on SQLite: " + Self.report(outcome)) }
            } else if Simulation(inMemory).run().stateHash != outcome.stateHash {
                differing.append(seed)
            }
        }
        let seconds = Date().timeIntervalSince(started)
        print(
            "simulation on SQLite: \(seeds.count) seeds in \(Int(seconds * 1000)) ms wall clock, \(failed.count) failed, "
                + "\(differing.count) ended differently than on the in-memory stores")
        print(total.summary)
        XCTAssertEqual(failed.map(\.seed), [], "seeds broke an invariant on SQLite" + (failed.first.map { "\n" + Self.report($0) } ?? ""))
        XCTAssertEqual(
            differing, [],
            "seeds ended with other orders on SQLite than on the in-memory stores "
                + "(reproduce: ORDERSYNC_SIM_SEED=<seed> swift test --filter testSeedsOnSQLite)")
        assertMinimumVolumes(total, seeds: seeds.count)
    }

    /// Runs the master and every slave on the SQLite adapters over in-memory databases.
    static func useSQLite(_ config: inout SimConfig) {
        config.makeMasterStore = {
            do { return try SQLiteSimMasterStore() } catch { fatalError("cannot open an in-memory SQLite database: \(error)") }
        }
        config.makeSlaveStore = {
            do { return try SQLiteSimSlaveStore() } catch { fatalError("cannot open an in-memory SQLite database: \(error)") }
        }
    }

    /// Runs seeds with a deliberately broken store until the checker reports one of `expected`;
    /// returns what it said.
    private func objection(
        _ seeds: ClosedRange<UInt64>, _ expected: Set<String>,
        _ configure: (inout SimConfig) -> Void
    ) -> SimViolation? {
        for seed in seeds {
            var config = SimConfig(seed: seed)
            configure(&config)
            if let v = Simulation(config).run().violations.first(where: { expected.contains($0.invariant) }) {
                print("broken store, seed \(seed): \(v.invariant): \(v.detail.prefix(300))")
                return v
            }
        }
        return nil
    }

    func testCheckerCatchesAMasterThatAppliesRepeats() {
        // Most repeats are harmless even when not recognised (a Create or an Update that changes
        // nothing is not applied again), so this takes more seeds than the others.
        // The slave keeps no answers either, so a POS app's retries reach the master.
        let v = objection(1...80, ["applied twice"]) {
            $0.makeMasterStore = { ForgetfulMasterStore() }
            $0.makeSlaveStore = { AnswerForgettingSlaveStore() }
        }
        XCTAssertNotNil(v, "a master that applies repeated operation ids again went unnoticed")
    }

    func testCheckerCatchesASlaveThatLosesItsOutboxOnACrash() {
        let v = objection(1...10, ["acknowledged write lost"]) { $0.makeSlaveStore = { OutboxLosingSlaveStore() } }
        XCTAssertNotNil(v, "a slave losing its outbox in a crash went unnoticed")
    }

    func testCheckerCatchesASlaveStoreThatDropsCommits() {
        let v = objection(1...10, ["read-your-writes", "applied sequence"]) { $0.makeSlaveStore = { CommitDroppingSlaveStore() } }
        XCTAssertNotNil(v, "a slave store dropping commits went unnoticed")
    }
}
