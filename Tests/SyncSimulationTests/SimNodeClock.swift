/// One simulated node's own wall clock: an offset from the others and a drift, both drawn from
/// the seed, so nodes disagree about the time the way real machines do (the engines must not
/// order anything by it) while a seed still gives one run.
struct SimNodeClock {
    /// Wall-clock milliseconds every node would read at virtual time 0 without skew.
    static let base: Int64 = 1_750_000_000_000

    /// How far this node's clock is ahead (negative: behind), in milliseconds.
    var offsetMillis: Int64
    /// How much faster this node's clock runs, in parts per million (negative: slower).
    var driftPPM: Int64

    /// A clock with up to ±2 minutes of offset and ±300 ppm of drift.
    static func random(_ rng: SimRandom) -> SimNodeClock {
        SimNodeClock(offsetMillis: rng.int(Int64(-120_000)...120_000), driftPPM: rng.int(Int64(-300)...300))
    }

    /// What this node's clock reads at virtual time `virtual`.
    func wall(atVirtual virtual: Int64) -> Int64 {
        Self.base + offsetMillis + virtual + virtual * driftPPM / 1_000_000
    }

    /// The virtual delay of a timer the node sets for `local` milliseconds of its own clock.
    func virtualDelay(_ local: Int64) -> Int64 {
        local * 1_000_000 / (1_000_000 + driftPPM)
    }
}
