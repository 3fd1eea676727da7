/// Delays between attempts to create an Avahi client when it cannot be created at all (no
/// D-Bus system bus): 1 s, doubling, at most 30 s; back to the start once connected.
struct ReconnectBackoff {
    /// First delay in milliseconds.
    let initial: UInt32
    /// Largest delay in milliseconds.
    let maximum: UInt32
    private var current: UInt32

    init(initial: UInt32 = 1_000, maximum: UInt32 = 30_000) {
        self.initial = initial
        self.maximum = maximum
        self.current = initial
    }

    /// The delay to wait now; the next one doubles, up to `maximum`.
    mutating func next() -> UInt32 {
        let delay = current
        current = current >= maximum / 2 ? maximum : current * 2
        return delay
    }

    /// Starts over from `initial` (after a successful connection).
    mutating func reset() {
        current = initial
    }
}
