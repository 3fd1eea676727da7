import OrderStore

/// Where the store writer is in its group commit, and what each phase holds. One event, one
/// `mutating func`; a move that cannot happen is our own bug (`preconditionFailure`).
///
///          openGroup            detach              commit on disk (or failed), on the loop
///     idle ---------> collecting ------> committing ---------------------------------------> idle
///                        |
///                        +-- rollback (BEGIN worked, the COMMIT could not be handed off) --> idle
struct StoreWriterState {
    /// The writer's phase, as callers see it.
    enum Phase: Equatable, Sendable {
        /// No group open, no COMMIT running: the connection is free on the loop.
        case idle
        /// A group is open: work is being applied in it in this loop turn.
        case collecting
        /// The group's COMMIT (and its `fsync`) runs off the loop.
        case committing
    }

    private enum State {
        case idle
        case collecting
        /// The COMMIT handed to the commit thread, and who is told once it is over.
        case committing(DetachedCommit, finished: (Result<Void, StoreError>) -> Void)
    }

    private var state = State.idle

    /// The phase.
    var phase: Phase {
        switch state {
        case .idle: return .idle
        case .collecting: return .collecting
        case .committing: return .committing
        }
    }

    /// A group was opened (`BEGIN IMMEDIATE` worked).
    mutating func opened() {
        guard case .idle = state else { preconditionFailure("a group opened while \(phase)") }
        state = .collecting
    }

    /// The group was rolled back without a COMMIT.
    mutating func rolledBack() {
        guard case .collecting = state else { preconditionFailure("a group rolled back while \(phase)") }
        state = .idle
    }

    /// The group was committed on the calling thread (at shutdown, the loop stopped).
    mutating func committedInPlace() {
        guard case .collecting = state else { preconditionFailure("a group was committed while \(phase)") }
        state = .idle
    }

    /// The group's COMMIT went to the commit thread; `finished` is told once it is over.
    mutating func detached(_ commit: DetachedCommit, finished: @escaping (Result<Void, StoreError>) -> Void) {
        guard case .collecting = state else { preconditionFailure("a group was committed while \(phase)") }
        state = .committing(commit, finished: finished)
    }

    /// `commit` is over: the state is idle again; returns whom to tell, or nil when `commit`
    /// is not the one in flight (it was already finished at shutdown).
    mutating func commitEnded(_ commit: DetachedCommit) -> ((Result<Void, StoreError>) -> Void)? {
        guard case .committing(let running, let finished) = state, running === commit else { return nil }
        state = .idle
        return finished
    }

    /// The COMMIT in flight, if any.
    var inFlight: DetachedCommit? {
        if case .committing(let commit, _) = state { return commit }
        return nil
    }
}
