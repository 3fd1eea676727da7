import Glibc

/// Closing: at once (`close()`), or after sending what is pending and a half-close
/// (`closeAfterFlush()`), bounded by a ``CloseDeadline`` (`closeTimeout` without progress,
/// `closeLimit` in all); `finish(_:)` releases everything and reports `onClose` once.
extension StreamChannel {
    /// Closes now, dropping unsent bytes; ``onClose`` gets ``CloseReason/localClose``.
    public func close() {
        loop.assertInEventLoop()
        finish(.localClose)
    }

    /// Sends what is pending, then shuts down the sending side (`SHUT_WR`) and closes once the
    /// peer closes too (input meanwhile is discarded), or once the socket took no byte for
    /// ``closeTimeout``, or after ``closeLimit`` in all.
    /// Later writes are ignored. ``onClose`` gets ``CloseReason/localClose`` (or an error if the
    /// pending bytes could not be sent in time).
    public func closeAfterFlush() {
        loop.assertInEventLoop()
        switch state {
        case .connecting:
            if pendingBytes == 0 {
                finish(.localClose)
            } else {
                closeWhenConnected = true
            }
        case .open:
            if let codec { writeToSocket(codec.closing()) }
            guard state == .open else { return }
            state = .flushingBeforeClose
            reasonAfterFlush = .localClose
            startCloseTimer()
            if pendingBytes == 0 {
                flushedBeforeClose()
            } else {
                updateInterest()
            }
        case .flushingBeforeClose, .halfClosed, .closed:
            return
        }
    }

    /// Bounds a close after flush: `closeTimeout` without progress, `closeLimit` in all.
    func startCloseTimer() {
        stopPendingDeadline()
        let deadline = CloseDeadline(started: loop.now, idleLimit: closeTimeout, totalLimit: closeLimit)
        closeDeadline = deadline
        armCloseTimer(at: deadline.due)
    }

    /// Records that the socket accepted bytes while closing.
    func closeProgressed() {
        closeDeadline?.progressed(at: loop.now)
    }

    private func armCloseTimer(at instant: MonotonicInstant) {
        closeTimer = loop.schedule(after: instant - loop.now) { [self] in
            closeTimer = nil
            closeTimerFired()
        }
    }

    /// The close's timer ran out: wait longer if bytes went meanwhile, else give up.
    private func closeTimerFired() {
        guard state == .flushingBeforeClose || state == .halfClosed else { return }
        // Timers run before readiness in a loop turn: after a long handler (a busy loop) the
        // timer is due though the peer may have been reading all along. Whether the socket
        // takes bytes now is the answer.
        if state == .flushingBeforeClose && pendingBytes > 0 {
            flush()
        }
        guard state == .flushingBeforeClose || state == .halfClosed, let deadline = closeDeadline else { return }
        switch deadline.verdict(at: loop.now) {
        case .wait(let until):
            armCloseTimer(at: until)
        case .idle:
            gaveUpClosing(call: "closeAfterFlush")
        case .overLimit:
            gaveUpClosing(call: "closeAfterFlush (its limit)")
        }
    }

    /// Ends a close that ran out of time: everything was sent (only the peer's close is
    /// missing), or `ETIMEDOUT` naming which bound ended it.
    private func gaveUpClosing(call: String) {
        if state == .halfClosed {
            finish(reasonAfterFlush)
        } else {
            finish(.error(PosixError(call: call, errno: ETIMEDOUT)))
        }
    }

    /// Everything was sent while closing: end our direction, or finish if the peer is gone.
    func flushedBeforeClose() {
        if peerEnded {
            finish(reasonAfterFlush)
            return
        }
        do {
            try socket.shutdownWrite()
        } catch let error as PosixError {
            finish(.error(error))
            return
        } catch {
            preconditionFailure("unexpected error \(error)")
        }
        state = .halfClosed
        updateInterest()
    }

    /// Releases everything and schedules ``onClose``. Safe to call more than once.
    func finish(_ reason: CloseReason) {
        guard state != .closed else {
            return
        }
        state = .closed
        if let closeTimer {
            loop.cancel(closeTimer)
            self.closeTimer = nil
        }
        closeDeadline = nil
        stopPendingDeadline()
        loop.unregister(fd: descriptor)
        socket.close()
        outbound = []
        outboundHead = 0
        headOffset = 0
        pendingBytes = 0
        let callback = onClose
        onRead = nil
        onClose = nil
        onDrained = nil
        onConnected = nil
        loop.runSoon {
            callback?(reason)
        }
    }
}
