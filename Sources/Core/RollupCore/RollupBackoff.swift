/// Reconnect delays: exponential from `base` doubling up to `cap`, each drawn at random from
/// its upper half ("equal jitter"), so that a chain's shops do not all retry in the same second
/// after head office comes back.
public struct RollupBackoff: Equatable, Sendable {
    /// The first delay's ceiling, in seconds.
    public var base: Double
    /// The largest delay, in seconds.
    public var cap: Double

    /// 0.5 s doubling up to 30 s by default.
    public init(base: Double = 0.5, cap: Double = 30) {
        self.base = base
        self.cap = cap
    }

    /// The delay before attempt `attempt` (1 for the first retry), with `unit` in 0..<1 the
    /// random draw: between half the ceiling and the ceiling, min(cap, base * 2^(attempt-1)).
    public func delay(attempt: Int, unit: Double) -> Double {
        let exponent = Double(min(max(attempt - 1, 0), 30))
        let ceiling = min(cap, base * pow2(exponent))
        let draw = min(max(unit, 0), 1)
        return ceiling / 2 + ceiling / 2 * draw
    }

    private func pow2(_ e: Double) -> Double {
        var v = 1.0
        var i = 0.0
        while i < e {
            v *= 2
            i += 1
        }
        return v
    }
}
