import Foundation

/// How a roll-up stops on SIGTERM or SIGINT (Docs/OPERATIONS.md, "Roll-up into head office"):
/// the runner holds `lock` through every step (a batch, a state file write) and lets go of it only
/// while it waits (for a change, a backoff, an operator); `stop()` takes it, so a batch in flight
/// is finished (committed, or rolled back by head office) first, then writes the state file with
/// `running:false`. It never lets go again: the caller ends the process.
final class RollupStopGate: @unchecked Sendable {
    // @unchecked: `onStop` is set once before the signal thread can call `stop()`, and the
    // runner state it touches is only used under `lock`.
    let lock = NSLock()
    var onStop: (() -> Void)?

    /// Waits for the step in flight, then runs `onStop`; keeps the lock.
    func stop() {
        lock.lock()
        onStop?()
    }

    /// Runs `wait` without the lock (a stop may come meanwhile), and takes it again.
    func unlocked(_ wait: () -> Void) {
        lock.unlock()
        wait()
        lock.lock()
    }
}

/// What another thread (the executable's signal thread) uses to stop a roll-up (`Sendable`).
public struct RollupStopHandle: Sendable {
    let gate: RollupStopGate

    /// Finishes the batch in flight, writes the state file with `running:false` and returns;
    /// the roll-up takes no further step. The caller exits.
    public func stop() { gate.stop() }
}
