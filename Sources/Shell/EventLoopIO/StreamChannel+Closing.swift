import Glibc

/// Closing: at once (`close()`), or after sending what is pending and a half-close
/// (`closeAfterFlush()`), bounded by `closeTimeout`; `finish(_:)` releases everything and
/// reports `onClose` once.
extension StreamChannel {
    /// Closes now, dropping unsent bytes; ``onClose`` gets ``CloseReason/localClose``.
    public func close() {
        loop.assertInEventLoop()
        finish(.localClose)
    }

    /// Sends what is pending, then shuts down the sending side (`SHUT_WR`) and closes once the
    /// peer closes too (input meanwhile is discarded), or after ``closeTimeout``.
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

    /// Bounds a close after flush by `closeTimeout`.
    func startCloseTimer() {
        closeTimer = loop.schedule(after: closeTimeout) { [self] in
            closeTimer = nil
            if state == .halfClosed {
                finish(reasonAfterFlush)
            } else {
                finish(.error(PosixError(call: "closeAfterFlush", errno: ETIMEDOUT)))
            }
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
