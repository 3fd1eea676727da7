/// Where a node's HTTP front-ends are in their life: one phase, changed by one event each.
///
/// ```
///   stopped --start()--> starting --started()--> running --stop()--> stopping --stopped()--> stopped
///                           |                                                                  ^
///                           +----------------------- failedToStart() --------------------------+
/// ```
///
/// Starting and stopping are each one call on the loop; their phases are what a re-entrant call
/// (a handler run while the front-ends start or stop) sees. Starting twice is our own bug and
/// traps; stopping what is not running does nothing, so a shutdown may stop them again.
struct FrontEndsPhase: Equatable {
    /// The phases.
    enum Phase: Equatable {
        /// Nothing listens (before the node starts, and after it stopped).
        case stopped
        /// The listeners are being started.
        case starting
        /// Every configured listener accepts.
        case running
        /// The listeners are being closed.
        case stopping
    }

    /// The phase now.
    private(set) var phase = Phase.stopped

    /// The node starts its front-ends; only from `stopped`.
    mutating func start() {
        guard phase == .stopped else { preconditionFailure("front-ends started while \(phase)") }
        phase = .starting
    }

    /// Every listener started.
    mutating func started() {
        guard phase == .starting else { preconditionFailure("front-ends reported started while \(phase)") }
        phase = .running
    }

    /// A listener could not start (the others were stopped again).
    mutating func failedToStart() {
        guard phase == .starting else { preconditionFailure("front-ends failed to start while \(phase)") }
        phase = .stopped
    }

    /// The node stops its front-ends: true when they run and must be closed now; false when
    /// they are stopped or already stopping.
    mutating func stop() -> Bool {
        switch phase {
        case .running:
            phase = .stopping
            return true
        case .stopped, .stopping:
            return false
        case .starting:
            preconditionFailure("front-ends stopped while starting")
        }
    }

    /// Every listener is closed.
    mutating func stopped() {
        guard phase == .stopping else { preconditionFailure("front-ends reported stopped while \(phase)") }
        phase = .stopped
    }
}
