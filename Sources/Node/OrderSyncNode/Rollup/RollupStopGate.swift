import Foundation
import PostgresClient
import Synchronization

/// How a roll-up stops on SIGTERM or SIGINT (Docs/OPERATIONS.md, "Roll-up into head office"):
/// the runner holds `lock` through every step (a batch, a state file write) and lets go of it only
/// while it waits (for a change, a backoff, an operator). `stop()` first breaks head office's call
/// in flight (`interrupt`: a batch on a dead link would otherwise wait out the link's deadlines),
/// so the step fails at once and the runner, seeing `isStopping`, lets go without recording an
/// error; the batch was not committed, so head office's checkpoint did not move. `stop()` then
/// takes the lock, writes the state file with `running:false`, and never lets go again: the
/// caller ends the process.
final class RollupStopGate: @unchecked Sendable {
    // @unchecked: `onStop` is set once before the signal thread can call `stop()`, and the
    // runner state it touches is only used under `lock`.
    let lock = NSLock()
    var onStop: (() -> Void)?
    /// Breaks the connection's call in flight; shared by every connection the runner opens.
    let interrupt = PostgresInterrupt()
    private let stopping = Atomic<Bool>(false)

    /// Whether a stop was asked for: the runner takes no further step.
    var isStopping: Bool { stopping.load(ordering: .acquiring) }

    /// Breaks head office's call in flight, waits (at most `deadline` seconds) for the step to
    /// end, then runs `onStop`; keeps the lock. Returns false when the step did not end in time
    /// (a connect on a dead link, whose socket is not ours to break yet): `onStop` did not run.
    func stop(deadline: TimeInterval) -> Bool {
        stopping.store(true, ordering: .releasing)
        interrupt.interrupt()
        guard lock.lock(before: Date(timeIntervalSinceNow: deadline)) else { return false }
        onStop?()
        return true
    }

    /// Runs `wait` without the lock (a stop may come meanwhile), and takes it again.
    func unlocked(_ wait: () -> Void) {
        lock.unlock()
        wait()
        lock.lock()
    }

    /// Lets go of the lock for good, for `stop()` to take (the runner's last act once stopping).
    func park() -> Never {
        lock.unlock()
        while true { Thread.sleep(forTimeInterval: 3600) }
    }
}

/// What another thread (the executable's signal thread) uses to stop a roll-up (`Sendable`).
public struct RollupStopHandle: Sendable {
    let gate: RollupStopGate

    /// Breaks head office's call in flight, writes the state file with `running:false` and
    /// returns true; the roll-up takes no further step. False when the step in flight did not
    /// end within `deadline` seconds (the state file was not written). The caller exits.
    public func stop(deadline: TimeInterval = 3) -> Bool { gate.stop(deadline: deadline) }
}
