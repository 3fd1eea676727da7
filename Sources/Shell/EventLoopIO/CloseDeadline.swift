/// When a close after flush (``StreamChannel/closeAfterFlush()``) gives up: once the socket has
/// accepted no byte for `idleLimit` (a peer that stopped reading, or never closes), or once the
/// close has lasted `totalLimit` (a peer that reads, but so slowly that it would hold the
/// connection and its buffer for ever). A peer that keeps reading gets everything, however long
/// each pause of the sender's loop or its own, as long as it is done within `totalLimit`.
///
/// Pure: the channel tells it when the close began and when bytes went, and asks at a timer's
/// end whether to wait longer.
struct CloseDeadline: Equatable {
    /// What the close should do at an instant.
    enum Verdict: Equatable {
        /// Keep going; look again at this instant.
        case wait(until: MonotonicInstant)
        /// No byte went for `idleLimit`.
        case idle
        /// The close has lasted `totalLimit`.
        case overLimit
    }

    /// The longest time without a byte accepted by the socket.
    let idleLimit: Duration
    /// The longest a close may last.
    let totalLimit: Duration
    private let started: MonotonicInstant
    private var lastProgress: MonotonicInstant

    /// A close that began at `started`.
    init(started: MonotonicInstant, idleLimit: Duration, totalLimit: Duration) {
        self.started = started
        self.lastProgress = started
        self.idleLimit = idleLimit
        self.totalLimit = totalLimit
    }

    /// The socket accepted bytes at `now`.
    mutating func progressed(at now: MonotonicInstant) {
        lastProgress = max(lastProgress, now)
    }

    /// The next instant at which the close may have to end.
    var due: MonotonicInstant {
        min(lastProgress + idleLimit, started + totalLimit)
    }

    /// Whether the close ends at `now`, and why.
    func verdict(at now: MonotonicInstant) -> Verdict {
        if now >= started + totalLimit { return .overLimit }
        if now >= lastProgress + idleLimit { return .idle }
        return .wait(until: due)
    }
}
