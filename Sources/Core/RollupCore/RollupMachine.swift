/// The roll-up's life (Docs/OPERATIONS.md, "Roll-up into head office"): connect, read head
/// office's checkpoint (the cursor, on every connect), ship batches, wait for new entries, back
/// off after a failure, stop on a conflict or a gap. Pure: the runner tells it what happened
/// and carries out the action it returns.
public struct RollupMachine: Sendable {
    /// What the runner does next.
    public enum Action: Equatable, Sendable {
        /// Open a connection to head office (create or migrate the schema if needed).
        case connect
        /// Read head office's checkpoint for this store and lineage.
        case readCheckpoint
        /// Look at the local journal after `checkpoint` and report `planned`.
        case plan(checkpoint: Int64)
        /// Ship the batch starting after `checkpoint`, within `first...last`.
        case ship(checkpoint: Int64, first: Int64, last: Int64)
        /// Everything stable is shipped: wait for the change feed (log `caught_up` once when
        /// `announce`).
        case wait(announce: Bool)
        /// Close the connection and wait `seconds` before connecting again.
        case backoff(seconds: Double, attempt: Int)
        /// Stop with an alarm: nothing more ships until an operator acts.
        case stop(Stop)
        /// `--once`: everything shippable went; exit 0.
        case finish
        /// `--once`: head office could not be reached; exit 69.
        case giveUp
    }

    /// Why the roll-up stopped.
    public enum Stop: Equatable, Sendable {
        /// Head office holds another entry at `seq`.
        case conflict(seq: Int64)
        /// The local journal lacks `first...last`.
        case gap(first: Int64, last: Int64)
    }

    /// The state as status shows it.
    public enum Phase: String, Sendable {
        case shipping, idle, backoff, conflict, gap
    }

    private enum State: Equatable {
        case connecting(attempt: Int)
        case readingCheckpoint
        case planning(checkpoint: Int64)
        case shipping(checkpoint: Int64)
        case waiting(checkpoint: Int64)
        case backingOff(attempt: Int)
        case stopped(Stop)
        case done
    }

    private var state: State = .connecting(attempt: 0)
    private let once: Bool
    private let backoff: RollupBackoff
    /// True until `caught_up` was announced since the last batch (logged once per catch-up).
    private var announced = false
    /// Failures since the last batch committed or the last catch-up: the backoff's attempt.
    private var failures = 0

    /// A roll-up that follows new entries, or (`once`) ships what there is and finishes.
    public init(once: Bool, backoff: RollupBackoff = RollupBackoff()) {
        self.once = once
        self.backoff = backoff
    }

    /// The first action.
    public func start() -> Action { .connect }

    /// Where it is, for status.
    public var phase: Phase {
        switch state {
        case .connecting, .readingCheckpoint, .planning, .shipping, .done: return .shipping
        case .waiting: return .idle
        case .backingOff: return .backoff
        case .stopped(.conflict): return .conflict
        case .stopped(.gap): return .gap
        }
    }

    /// The checkpoint it works from, when it has read one.
    public var checkpoint: Int64? {
        switch state {
        case .planning(let c), .shipping(let c), .waiting(let c): return c
        default: return nil
        }
    }

    /// Connected (and the schema is there).
    public mutating func connected() -> Action {
        guard case .connecting = state else { preconditionFailure("connected while \(state)") }
        state = .readingCheckpoint
        return .readCheckpoint
    }

    /// Head office's checkpoint is at `seq`.
    public mutating func checkpointRead(seq: Int64) -> Action {
        guard case .readingCheckpoint = state else { preconditionFailure("checkpoint read while \(state)") }
        state = .planning(checkpoint: seq)
        return .plan(checkpoint: seq)
    }

    /// The local journal's answer for the checkpoint being planned.
    public mutating func planned(_ range: RollupRange) -> Action {
        guard case .planning(let c) = state else { preconditionFailure("planned while \(state)") }
        switch range {
        case .ship(let first, let last):
            state = .shipping(checkpoint: c)
            return .ship(checkpoint: c, first: first, last: last)
        case .caughtUp:
            failures = 0
            if once {
                state = .done
                return .finish
            }
            state = .waiting(checkpoint: c)
            defer { announced = true }
            return .wait(announce: !announced)
        case .gap(let first, let last):
            state = .stopped(.gap(first: first, last: last))
            return .stop(.gap(first: first, last: last))
        }
    }

    /// A batch is committed: the checkpoint is now `seq`.
    public mutating func committed(through seq: Int64) -> Action {
        guard case .shipping = state else { preconditionFailure("committed while \(state)") }
        announced = false
        failures = 0
        state = .planning(checkpoint: seq)
        return .plan(checkpoint: seq)
    }

    /// The change feed (or the files) say something changed; ignored unless waiting.
    public mutating func woke() -> Action? {
        guard case .waiting(let c) = state else { return nil }
        state = .planning(checkpoint: c)
        return .plan(checkpoint: c)
    }

    /// Another roll-up moved the checkpoint under this one: read it again.
    public mutating func checkpointMoved() -> Action {
        guard case .shipping = state else { preconditionFailure("checkpoint moved while \(state)") }
        state = .readingCheckpoint
        return .readCheckpoint
    }

    /// Head office holds a different entry at `seq`: stop with the alarm.
    public mutating func conflict(seq: Int64) -> Action {
        state = .stopped(.conflict(seq: seq))
        return .stop(.conflict(seq: seq))
    }

    /// Connecting, reading or shipping failed (the link, the server, a statement). `unit` in
    /// 0..<1 is the random draw for the delay. With `--once` an unreachable head office gives up.
    public mutating func failed(unit: Double) -> Action {
        if case .stopped = state { preconditionFailure("failed while \(state)") }
        if case .done = state { preconditionFailure("failed while \(state)") }
        failures += 1
        let attempt = failures
        if once {
            state = .done
            return .giveUp
        }
        state = .backingOff(attempt: attempt)
        return .backoff(seconds: backoff.delay(attempt: attempt, unit: unit), attempt: attempt)
    }

    /// The backoff delay is over: connect again.
    public mutating func backoffElapsed() -> Action {
        guard case .backingOff(let a) = state else { preconditionFailure("backoff elapsed while \(state)") }
        state = .connecting(attempt: a)
        return .connect
    }
}
