import CIMode
import Foundation
import XCTest

/// The simulation checks itself: engines broken on purpose must break the invariant meant to
/// catch that bug, and a run must be the same in another process.
final class SimulationSelfCheckTests: XCTestCase {
    /// Finds the first seed in `seeds` where `mutation` breaks `invariant`, and requires the
    /// same seed to pass with the engines as shipped (so the mutation, not the seed, broke it).
    private func assertCaught(
        _ mutation: SimMutation, by invariant: String, saying words: String = "",
        seeds: ClosedRange<UInt64>, file: StaticString = #filePath, line: UInt = #line
    ) {
        for seed in seeds {
            var config = SimConfig(seed: seed)
            config.mutation = mutation
            let broken = Simulation(config).run()
            guard let v = broken.violations.first(where: { $0.invariant == invariant && (words.isEmpty || $0.detail.contains(words)) })
            else { continue }
            print("mutation \(mutation.rawValue), seed \(seed): \(v.invariant): \(v.detail.prefix(300))")
            let clean = Simulation(SimConfig(seed: seed)).run()
            XCTAssertEqual(
                clean.violations.map(\.invariant), [], "seed \(seed) fails without the mutation too",
                file: file, line: line)
            return
        }
        XCTFail(
            "the engine mutation \(mutation.rawValue) went unnoticed by \"\(invariant)\" (\(words)) on seeds \(seeds)",
            file: file, line: line)
    }

    func testCheckerCatchesAMasterEngineThatSkipsAJournalEntry() {
        assertCaught(.skipJournalEntry, by: "journal gapless", seeds: 1...10)
    }

    func testCheckerCatchesAnAnswerTheSlaveEngineNeverGets() {
        assertCaught(.dropAnswers, by: "convergence", seeds: 1...10)
    }

    func testCheckerCatchesASlaveEngineThatReordersItsOperations() {
        assertCaught(.reorderTerminalOps, by: "per-terminal order", seeds: 1...40)
    }

    func testCheckerCatchesAMasterEngineThatAppliesARepeat() {
        assertCaught(.applyRepeat, by: "applied twice", saying: "journal entries", seeds: 1...40)
        assertCaught(.applyRepeat, by: "applied twice", saying: "answered with seqs", seeds: 1...40)
    }

    /// Seeds whose run hash is compared across processes.
    private static let hashSeeds: [UInt64] = Array(1...8)
    /// Set in the second process: it prints the hash of `hashSeeds` and does nothing else.
    private static let childVariable = "ORDERSYNC_SIM_HASH_CHILD"

    /// The same seeds give the same runs in another process of the same test bundle (no
    /// dependence on addresses, hashing seeds of `Set`/`Dictionary`, or the wall clock).
    func testRunHashIsTheSameInAnotherProcess() throws {
        let hash = SyncSimulationTests.run(Self.hashSeeds) { $0.hashesText = true }
        if ProcessInfo.processInfo.environment[Self.childVariable] != nil {
            print("simulation run hash: \(hash)")
            return
        }
        let bundle = CommandLine.arguments[0]
        guard bundle.hasSuffix(".xctest"), FileManager.default.isExecutableFile(atPath: bundle) else {
            let why = "the test bundle is not an executable .xctest (\(bundle)): cannot start a second process"
            if CIMode.isOn { return XCTFail(why) }
            throw XCTSkip(why)
        }
        let child = Process()
        child.executableURL = URL(fileURLWithPath: bundle)
        child.arguments = ["SyncSimulationTests.SimulationSelfCheckTests/testRunHashIsTheSameInAnotherProcess"]
        var environment = ProcessInfo.processInfo.environment
        environment[Self.childVariable] = "1"
        child.environment = environment
        let pipe = Pipe()
        child.standardOutput = pipe
        child.standardError = FileHandle.nullDevice
        try child.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        child.waitUntilExit()
        XCTAssertEqual(child.terminationStatus, 0, "the second process failed:\n\(output.suffix(2000))")
        let line = output.split(separator: "\n").first { $0.hasPrefix("simulation run hash: ") }
        XCTAssertEqual(
            line.map { String($0.dropFirst("simulation run hash: ".count)) }, hash,
            "seeds \(Self.hashSeeds) ran differently in a second process")
        print("seeds \(Self.hashSeeds.first!)...\(Self.hashSeeds.last!): run hash \(hash) in both processes")
    }
}
