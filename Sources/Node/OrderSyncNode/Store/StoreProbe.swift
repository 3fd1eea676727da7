import EventLoopIO

/// The recovery probe of a failing store (`StoreWriter+Health.swift`): from a failed commit
/// until one succeeds, one small write (a metadata row, in a group committed off the loop like
/// any other) is tried every ``interval``, so that `ready.store` and `ordersync check` come back
/// once the disk has room (or the file is writable) again, without waiting for the next order
/// or the master's next change. Any commit that succeeds meanwhile ends it too.
///
/// ```
///   off --failed()--> armed --fired()--> probing --ended(stillFailing: true)--> armed
///    ^                  |                   |
///    +-- committed() ---+                   +-- ended(stillFailing: false) --> off
/// ```
///
/// The caller owns the timer: `arm` schedules it, and a cancelled one is handed back to cancel.
struct StoreProbe {
    /// Time between two probes while the store fails.
    static let interval: Duration = .seconds(10)
    /// The metadata row a probe writes: when the last probe ran (wall-clock milliseconds).
    static let metadataKey = "store.probed_ms"

    private enum State {
        /// The store is healthy (or a probe is not wanted yet).
        case off
        /// The store fails; a probe is due when the timer fires.
        case armed(TimerHandle)
        /// A probe's write is on its way to the disk.
        case probing
    }

    private var state = State.off

    /// A commit failed: arms the timer unless a probe is already due or running.
    mutating func failed(arm: () -> TimerHandle) {
        if case .off = state { state = .armed(arm()) }
    }

    /// A commit succeeded: no probe is needed; returns the timer to cancel, if one was armed. A
    /// probe on its way ends on its own (``ended(stillFailing:arm:)``).
    mutating func committed() -> TimerHandle? {
        guard case .armed(let timer) = state else { return nil }
        state = .off
        return timer
    }

    /// The timer fired: true when the probe is to be written now.
    mutating func fired() -> Bool {
        guard case .armed = state else { return false }
        state = .probing
        return true
    }

    /// The probe's write ended, on disk or not: armed again while the store still fails
    /// (nothing once the writer closed meanwhile, ``stop()``).
    mutating func ended(stillFailing: Bool, arm: () -> TimerHandle) {
        guard case .probing = state else { return }
        state = stillFailing ? .armed(arm()) : .off
    }

    /// The writer closes: returns the timer to cancel, if one was armed.
    mutating func stop() -> TimerHandle? {
        defer { state = .off }
        if case .armed(let timer) = state { return timer }
        return nil
    }
}
