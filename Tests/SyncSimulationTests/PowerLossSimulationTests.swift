import FaultVFS
import Foundation
import XCTest

/// The simulation with every store on a real SQLite file below which the fault VFS loses
/// power: crashes are process deaths or power cuts that drop or tear unsynced writes, and the
/// injected commit failures are EIO and ENOSPC from the disk. Every invariant of the checker
/// must hold: no acknowledged operation lost, none applied twice.
final class PowerLossSimulationTests: XCTestCase {
    private var directory = ""

    override func setUpWithError() throws {
        try super.setUpWithError()
        directory = NSTemporaryDirectory() + "/ordersync-powerloss-\(getpid())-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        FaultVFS.install()
    }

    override func tearDownWithError() throws {
        FaultVFS.reset()
        FaultVFS.uninstall()
        try? FileManager.default.removeItem(atPath: directory)
        try super.tearDownWithError()
    }

    /// One run of `seed` with its stores in a directory of their own on the fault VFS; `lying`
    /// makes every sync of the master's disk lie. Returns the outcome, the VFS's counters and
    /// the number of store calls a power cut interrupted.
    private func run(seed: UInt64, lying: Bool = false, _ configure: (inout SimConfig) -> Void = { _ in })
        throws -> (SimOutcome, FaultVFS.Counters, Int)
    {
        let runDirectory = directory + "/seed-\(seed)"
        defer { try? FileManager.default.removeItem(atPath: runDirectory) }
        FaultVFS.reset()
        FaultVFS.skipRealSync(true)
        var config = SimConfig(seed: seed)
        configure(&config)
        let masterDirectory = runDirectory + "/master"
        try FileManager.default.createDirectory(atPath: masterDirectory, withIntermediateDirectories: true)
        if lying { FaultVFS.arm(.lyingSync, on: .sync, under: masterDirectory + "/", count: -1) }
        config.makeMasterStore = {
            do { return try PowerLossSimMasterStore(directory: masterDirectory, seed: seed &* 31 &+ 7) } catch {
                fatalError("cannot open the master's store: \(error)")
            }
        }
        var slaveCount: UInt64 = 0
        config.makeSlaveStore = {
            slaveCount += 1
            let dir = runDirectory + "/slave-\(slaveCount)"
            do {
                try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
                return try PowerLossSimSlaveStore(directory: dir, seed: seed &* 31 &+ 7 &+ slaveCount)
            } catch {
                fatalError("cannot open a slave's store: \(error)")
            }
        }
        let sim = Simulation(config)
        if !lying { wirePowerCuts(sim) }
        let outcome = sim.run()
        let disks = [(sim.master.store as? PowerLossSimMasterStore)?.disk] + sim.slaves.map { ($0.store as? PowerLossSimSlaveStore)?.disk }
        return (outcome, FaultVFS.counters, disks.reduce(0) { $0 + ($1?.cutsInCalls ?? 0) })
    }

    /// Lets the stores' disks cut the power in the middle of a store call, and crash their node
    /// right after (the call fails first, as a dying process's last write would).
    private func wirePowerCuts(_ sim: Simulation) {
        if let store = sim.master.store as? PowerLossSimMasterStore {
            store.disk.powerCutChance = 0.02
            store.disk.faultsActive = { [unowned sim] in sim.faultsOn }
            store.disk.crashNode = { [unowned sim] in sim.clock.schedule(after: 0) { sim.crashMaster() } }
        }
        for node in sim.slaves {
            guard let store = node.store as? PowerLossSimSlaveStore else { continue }
            store.disk.powerCutChance = 0.01
            store.disk.faultsActive = { [unowned sim] in sim.faultsOn }
            store.disk.crashNode = { [unowned sim, unowned node] in sim.clock.schedule(after: 0) { sim.crashSlave(node) } }
        }
    }

    /// Every twentieth seed (all when fewer than twenty are asked for).
    func testSeedsWithPowerCutsAndDiskErrors() throws {
        let all = SyncSimulationTests.seeds()
        let seeds = all.count < 20 ? all : all.filter { $0 % 20 == 0 }
        var total = SimStats()
        var vfs = FaultVFS.Counters()
        var failed: [SimOutcome] = []
        var cutsInCalls = 0
        let started = Date()
        for seed in seeds {
            let (outcome, counters, cuts) = try run(seed: seed) { $0.disabledFaults = SyncSimulationTests.disabledFaults() }
            cutsInCalls += cuts
            var figures = outcome.stats
            figures.seeds = 1
            total.add(figures)
            vfs.add(counters)
            if !outcome.violations.isEmpty {
                failed.append(outcome)
                if failed.count <= 3 { print("on the fault VFS: " + SyncSimulationTests.report(outcome)) }
            }
        }
        let millis = Int(Date().timeIntervalSince(started) * 1000)
        let crashes = total.masterCrashes + total.slaveCrashes
        let run =
            "seeds=\(seeds.count) millis=\(millis) acknowledged=\(total.acknowledged) crashes=\(crashes) "
            + "power_cuts_in_calls=\(cutsInCalls)"
        print("FIGURE powerloss_sim \(run) \(vfs) violations=\(failed.count)")
        XCTAssertEqual(
            failed.map(\.seed), [],
            "seeds broke an invariant on the fault VFS (reproduce: ORDERSYNC_SIM_SEED=<seed> swift test "
                + "--filter PowerLossSimulationTests)" + (failed.first.map { "\n" + SyncSimulationTests.report($0) } ?? ""))
        guard seeds.count >= 10 else { return }
        XCTAssertGreaterThan(total.acknowledged, 0)
        XCTAssertGreaterThan(vfs.powerCuts, 0, "no power cut happened")
        XCTAssertGreaterThan(vfs.kills, 0, "no process died")
        XCTAssertGreaterThan(vfs.faultsInjected, 0, "no disk error was injected")
        XCTAssertGreaterThan(vfs.bytesReverted, 0, "no power cut lost anything: the runs did not test durability")
    }

    /// The same runs on a master whose disk acknowledges syncs it never made: the checker must
    /// see acknowledged operations lost (or a journal that reuses their sequence numbers).
    func testTheCheckerCatchesAMasterOnADiskWhoseSyncsLie() throws {
        for seed in UInt64(1)...40 {
            let (outcome, _, _) = try run(seed: seed, lying: true) {
                // No injected disk errors: they would disarm the lying rule.
                $0.disabledFaults = ["master-disk", "master-disk-after", "records", "slave-disk"]
            }
            if let v = outcome.violations.first {
                print("lying disk, seed \(seed): \(v.invariant): \(v.detail.prefix(300))")
                return
            }
        }
        XCTFail("a master on a disk whose syncs lie lost nothing the checker noticed")
    }
}
