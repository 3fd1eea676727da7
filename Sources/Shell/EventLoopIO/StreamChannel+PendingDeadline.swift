import Glibc

/// A deadline on bytes waiting while the channel is open (``StreamChannel/boundsPendingWrites``),
/// the same ``CloseDeadline`` a close after flush has: a keep-alive HTTP client that stops
/// reading an answer (or reads a trickle) would otherwise hold the connection and up to
/// ``StreamChannel/maxPendingBytes`` of buffer for ever, as only closes were bounded.
///
/// The deadline starts when bytes begin to wait (the socket took less than was written), moves
/// on each time the socket takes some, and ends when nothing waits any more. When it runs out
/// the channel first tries to send (after a busy loop, timers run before readiness), and closes
/// with `ETIMEDOUT` only if the socket still took nothing for ``StreamChannel/closeTimeout``, or
/// bytes have waited for ``StreamChannel/closeLimit`` without a break.
extension StreamChannel {
    /// Called after each change of what waits: starts, moves on or stops the deadline.
    func pendingChanged(progressed: Bool) {
        guard boundsPendingWrites, state == .open, pendingBytes > 0 else {
            stopPendingDeadline()
            return
        }
        if pendingDeadline != nil {
            if progressed { pendingDeadline?.progressed(at: loop.now) }
            return
        }
        let deadline = CloseDeadline(started: loop.now, idleLimit: closeTimeout, totalLimit: closeLimit)
        pendingDeadline = deadline
        armPendingTimer(at: deadline.due)
    }

    /// Nothing waits any more, or the channel is closing (its close has a deadline of its own).
    func stopPendingDeadline() {
        if let pendingTimer { loop.cancel(pendingTimer) }
        pendingTimer = nil
        pendingDeadline = nil
    }

    private func armPendingTimer(at instant: MonotonicInstant) {
        pendingTimer = loop.schedule(after: instant - loop.now) { [self] in
            pendingTimer = nil
            pendingTimerFired()
        }
    }

    /// The deadline's timer ran out: wait longer if bytes went meanwhile, else close.
    private func pendingTimerFired() {
        guard state == .open, pendingBytes > 0 else {
            stopPendingDeadline()
            return
        }
        flush()
        guard state == .open, pendingBytes > 0, let deadline = pendingDeadline else { return }
        switch deadline.verdict(at: loop.now) {
        case .wait(let until):
            armPendingTimer(at: until)
        case .idle:
            finish(.error(PosixError(call: "write (no byte taken)", errno: ETIMEDOUT)))
        case .overLimit:
            finish(.error(PosixError(call: "write (its limit)", errno: ETIMEDOUT)))
        }
    }
}
