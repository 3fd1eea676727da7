import SyncCore

/// Retention in the simulation: the master keeps its journal and its terminals for the
/// shipped 30 days, and in about half the seeds every node's wall clock jumps 31 days forward
/// once during the fault phase (a store closed for a month, or a master clock corrected
/// forward), so that journal entries age past the horizon, terminals away at that moment are
/// forgotten and the journal is compacted while writes, retries and faults go on.
extension Simulation {
    /// The master's history horizon (`MasterEngine.journalKeepMillis`), as shipped.
    static let journalKeepMillis: Int64 = 30 * 24 * 3600 * 1000
    /// How far a jump moves every wall clock: past the journal's and the terminals' horizons.
    static let clockJumpMillis: Int64 = 31 * 24 * 3600 * 1000

    /// Schedules this seed's clock jump, if it has one, at a time of the fault phase that leaves
    /// at least one housekeeping tick after it. Draws from a generator of its own, so the rest of
    /// the seed's run is drawn as it would be without it.
    func scheduleClockJump() {
        let draw = SimRandom(seed: config.seed ^ 0xC10C_4A3B_5EED_0031)
        guard !config.disabledFaults.contains("clock-jump"), config.faultMillis > 10_000, draw.chance(0.5) else { return }
        let at = draw.int(Int64(2_000)...(config.faultMillis - 6_000))
        clock.schedule(after: at) { [unowned self] in self.jumpClocks() }
    }

    /// Every node's wall clock reads `clockJumpMillis` later from now on.
    private func jumpClocks() {
        master.wallClock.offsetMillis += Self.clockJumpMillis
        for s in slaves { s.wallClock.offsetMillis += Self.clockJumpMillis }
        stats.clockJumps += 1
        trace.add(clock.now, "sim", "clock jump", "+\(Self.clockJumpMillis / 86_400_000) days on every node")
    }
}
