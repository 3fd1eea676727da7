import Glibc

/// Readiness and reading: the interest the channel asks the loop for in each state, what a
/// readiness notification does (flush, read, complete a connect), and what is read (through the
/// codec when there is one) or the peer's end of stream.
extension StreamChannel {
    /// The readiness to watch in the current state: writable only while bytes are pending.
    private func desiredInterest() -> Interest {
        switch state {
        case .connecting:
            return .writable
        case .open:
            return pendingBytes > 0 ? [.readable, .writable] : .readable
        case .flushingBeforeClose:
            var interest: Interest = peerEnded ? [] : .readable
            if pendingBytes > 0 {
                interest.insert(.writable)
            }
            return interest
        case .halfClosed:
            return .readable
        case .closed:
            return []
        }
    }

    /// Tells the loop the interest of the current state (closing on failure).
    func updateInterest() {
        guard state != .closed else {
            return
        }
        do {
            try loop.setInterest(fd: descriptor, desiredInterest())
        } catch let error as PosixError {
            finish(.error(error))
        } catch {
            preconditionFailure("unexpected error \(error)")
        }
    }

    /// One readiness notification from the loop: completes a connect, flushes, reads.
    func handle(_ readiness: Readiness) {
        switch state {
        case .closed:
            return
        case .connecting:
            completeConnect()
            return
        case .open, .flushingBeforeClose, .halfClosed:
            break
        }
        // On hangup or error a send surfaces the failure even when only writability was
        // asked for; otherwise the level-triggered hangup would be reported again at once.
        if pendingBytes > 0 && !readiness.isDisjoint(with: [.writable, .hangup, .error]) {
            flush()
        }
        if state != .closed && !readiness.isDisjoint(with: [.readable, .hangup, .error]) {
            readOnce()
        }
    }

    /// Reads once, at most `maxReadBytes`, into the loop's shared buffer.
    private func readOnce() {
        let limit = max(1, min(maxReadBytes, loop.readBuffer.count))
        let buffer = UnsafeMutableRawBufferPointer(rebasing: loop.readBuffer[0..<limit])
        let result: IOResult<Int>
        do {
            result = try socket.receive(into: buffer)
        } catch let error as PosixError {
            finish(state == .halfClosed ? reasonAfterFlush : .error(error))
            return
        } catch {
            preconditionFailure("unexpected error \(error)")
        }
        switch result {
        case .wouldBlock:
            return
        case .value(0):
            peerEndedStream()
        case .value(let count):
            if state == .open {
                received(Array(UnsafeRawBufferPointer(rebasing: buffer[0..<count])))
            }
        }
    }

    /// Hands what was read to the owner, through the codec if there is one.
    func received(_ bytes: [UInt8]) {
        guard let codec else {
            onRead?(bytes)
            return
        }
        let output = codec.decode(bytes)
        writeToSocket(output.reply)
        if output.failure != nil {
            closeAfterFlush()
            return
        }
        if state == .open, !output.received.isEmpty { onRead?(output.received) }
    }

    /// The peer ended its sending side: deliver what is owed first, then close.
    private func peerEndedStream() {
        peerEnded = true
        switch state {
        case .open where pendingBytes > 0:
            // The peer may have shut down only its sending side: deliver what we owe first.
            state = .flushingBeforeClose
            reasonAfterFlush = .endOfFile
            startCloseTimer()
            updateInterest()
        case .open:
            finish(.endOfFile)
        case .flushingBeforeClose:
            updateInterest()
        case .halfClosed:
            finish(reasonAfterFlush)
        case .connecting, .closed:
            return
        }
    }

    /// A nonblocking connect finished: open, run `onConnected`, then send what was buffered.
    private func completeConnect() {
        do {
            try socket.finishConnect()
        } catch let error as PosixError {
            finish(.error(error))
            return
        } catch {
            preconditionFailure("unexpected error \(error)")
        }
        if let address = try? socket.peerAddress() {
            peerAddress = address
        }
        state = .open
        let callback = onConnected
        onConnected = nil
        callback?(self)
        guard state == .open else {
            return
        }
        if closeWhenConnected {
            closeAfterFlush()
        } else if pendingBytes > 0 {
            flush()
        } else {
            updateInterest()
        }
    }
}
