import Glibc

/// A connected stream socket driven by an ``EventLoop``: reads are delivered to ``onRead``,
/// writes are buffered and flushed as the socket becomes writable, and ``onClose`` reports the
/// end exactly once.
///
/// The channel registers itself on the loop and stays alive while registered, so the caller
/// need not hold it. All members are used on the loop thread (asserted in debug builds); the
/// type is not `Sendable`, so the compiler keeps it from being handed to another thread. Set
/// the callbacks before control returns to the loop.
///
/// Writes go out at once when nothing is pending; the rest waits in an outbound buffer and the
/// channel watches `EPOLLOUT` only while that buffer is non-empty. A peer that does not read
/// makes the buffer grow; past ``maxPendingBytes`` the channel closes with
/// ``CloseReason/sendBufferOverflow`` rather than holding unbounded memory.
///
/// A ``StreamCodec`` (TLS) may sit between the socket and the owner
/// (``install(codec:replaying:)``): then ``onRead`` gets what it decoded, ``write(_:)`` sends
/// what it encoded, and ``pendingBytes`` counts the encoded bytes.
public final class StreamChannel {
    enum State {
        case connecting
        case open
        /// `closeAfterFlush()` (or end of stream with bytes pending): sending what is left.
        case flushingBeforeClose
        /// All sent and `SHUT_WR` done: discarding input until the peer closes too.
        case halfClosed
        case closed
    }

    /// The loop this channel runs on.
    public let loop: EventLoop
    /// The peer as `ip:port` (`[ip]:port` for IPv6), or the socket path for Unix sockets.
    public private(set) var peerAddress: String
    /// Called on the loop thread with each chunk read (at most ``maxReadBytes`` per readiness).
    public var onRead: (([UInt8]) -> Void)?
    /// Called once, on the loop thread, after the channel closed; never from inside a call to
    /// ``write(_:)``, ``close()`` or ``closeAfterFlush()`` (it runs after the current handler).
    public var onClose: ((CloseReason) -> Void)?
    /// The most bytes that may wait in the outbound buffer (default 16 MiB).
    public var maxPendingBytes = 16 << 20
    /// The most bytes read per readiness notification (default 64 KiB, at most 256 KiB).
    public var maxReadBytes = 64 << 10
    /// How long ``closeAfterFlush()`` may take before the channel is closed anyway.
    public var closeTimeout: Duration = .seconds(5)
    /// Bytes accepted by ``write(_:)`` but not yet handed to the kernel.
    public private(set) var pendingBytes = 0
    /// Called on the loop thread when a flush brings ``pendingBytes`` from above
    /// ``drainedThreshold`` to at most it: the owner may write more (flow control).
    public var onDrained: (() -> Void)?
    /// The low-water mark for ``onDrained`` (default 1 MiB).
    public var drainedThreshold = 1 << 20
    /// The layer (TLS) between the socket and ``onRead``/``write(_:)``, if any: see
    /// ``install(codec:replaying:)``.
    public private(set) var codec: (any StreamCodec)?

    let socket: Socket
    let descriptor: Int32
    var state: State
    private var outbound: [[UInt8]] = []
    private var outboundHead = 0
    private var headOffset = 0
    private var peerEnded = false
    private var reasonAfterFlush = CloseReason.localClose
    private var closeTimer: TimerHandle?
    private var closeWhenConnected = false
    private var onConnected: ((StreamChannel) -> Void)?

    /// Adopts a connected, nonblocking socket and starts reading.
    public convenience init(socket: Socket, loop: EventLoop) throws {
        try self.init(socket: socket, loop: loop, state: .open)
    }

    /// Adopts a socket whose nonblocking connect is in progress (from
    /// ``TCPSocket/connect(host:port:)``). `onConnected` runs once it is connected; a failed
    /// connect calls ``onClose`` with ``CloseReason/error(_:)`` (e.g. `ECONNREFUSED`) instead.
    /// Writes made before the connection completes are buffered.
    public static func connecting(
        _ socket: Socket, loop: EventLoop,
        onConnected: @escaping (StreamChannel) -> Void
    ) throws -> StreamChannel {
        let channel = try StreamChannel(socket: socket, loop: loop, state: .connecting)
        channel.onConnected = onConnected
        return channel
    }

    private init(socket: Socket, loop: EventLoop, state: State) throws {
        precondition(socket.isOpen, "StreamChannel needs an open socket")
        self.loop = loop
        self.socket = socket
        self.descriptor = socket.descriptor
        self.state = state
        loop.assertInEventLoop()
        self.peerAddress = socket.remoteAddress ?? (try? socket.peerAddress()) ?? "unknown"
        let interest: Interest = state == .connecting ? .writable : .readable
        try loop.register(fd: descriptor, interest: interest) { readiness in
            // The loop holds the channel through this closure until it is unregistered.
            self.handle(readiness)
        }
    }

    /// `true` until the channel closed (it stays `true` while ``closeAfterFlush()`` runs).
    public var isOpen: Bool { state != .closed }

    /// The credentials of the process at the other end of a Unix domain socket
    /// (`SO_PEERCRED`); throws `EBADF` once the channel is closed.
    public func peerCredentials() throws -> PeerCredentials {
        guard socket.isOpen else { throw PosixError(call: "getsockopt(SO_PEERCRED)", errno: EBADF) }
        return try socket.peerCredentials()
    }

    /// `true` while writes are accepted (connected or connecting, and no close requested).
    public var isWritable: Bool { state == .open || state == .connecting }

    // MARK: Writing

    /// Queues `bytes` for sending, sending at once what the kernel takes. Ignored once a close
    /// was requested. May close the channel (overflow or a send error), reported via ``onClose``.
    public func write(_ bytes: [UInt8]) {
        loop.assertInEventLoop()
        guard isWritable, !bytes.isEmpty else {
            return
        }
        guard let codec else {
            writeToSocket(bytes)
            return
        }
        do {
            writeToSocket(try codec.encode(bytes))
        } catch {
            finish(.error(PosixError(call: "encode", errno: EPROTO)))
        }
    }

    /// Starts decoding what is read and encoding what is written with `codec`, and decodes
    /// `bytes` (already read, e.g. to recognise the protocol) as if they had just arrived.
    public func install(codec: any StreamCodec, replaying bytes: [UInt8]) {
        loop.assertInEventLoop()
        precondition(self.codec == nil, "a StreamChannel takes one codec")
        self.codec = codec
        if !bytes.isEmpty { received(bytes) }
    }

    /// Queues `bytes` as they go on the wire.
    private func writeToSocket(_ bytes: [UInt8]) {
        guard isWritable, !bytes.isEmpty else {
            return
        }
        var offset = 0
        if state == .open && pendingBytes == 0 {
            do {
                offset = try sendDirectly(bytes)
            } catch let error as PosixError {
                finish(.error(error))
                return
            } catch {
                preconditionFailure("unexpected error \(error)")
            }
        }
        guard offset < bytes.count else {
            return
        }
        enqueue(offset == 0 ? bytes : Array(bytes[offset...]))
        if pendingBytes > maxPendingBytes {
            finish(.sendBufferOverflow)
            return
        }
        updateInterest()
    }

    /// The most buffers one gathering write hands the kernel.
    static let gatheringBatch = 64

    /// Queues `buffers` for sending, in order, as ``write(_:)`` does for each of them, but
    /// hands the kernel as many as it takes in one `sendmsg` per batch of 64: the frames a
    /// terminal gets in one loop turn cost one system call, not one each.
    public func write(gathering buffers: [[UInt8]]) {
        loop.assertInEventLoop()
        guard isWritable else { return }
        if codec != nil {
            write(Array(buffers.joined()))
            return
        }
        var next = 0
        var offset = 0
        if state == .open && pendingBytes == 0 {
            do {
                (next, offset) = try sendGathering(buffers)
            } catch let error as PosixError {
                finish(.error(error))
                return
            } catch {
                preconditionFailure("unexpected error \(error)")
            }
        }
        guard next < buffers.count else { return }
        for index in next..<buffers.count where !buffers[index].isEmpty {
            let bytes = buffers[index]
            enqueue(index == next && offset > 0 ? Array(bytes[offset...]) : bytes)
        }
        if pendingBytes > maxPendingBytes {
            finish(.sendBufferOverflow)
            return
        }
        updateInterest()
    }

    /// Sends `buffers` with `sendmsg` until the kernel takes no more; returns the first buffer
    /// not sent whole and how much of it went.
    private func sendGathering(_ buffers: [[UInt8]]) throws -> (next: Int, offset: Int) {
        var next = 0
        var offset = 0
        let vectors = UnsafeMutableBufferPointer<iovec>.allocate(capacity: Self.gatheringBatch)
        defer { vectors.deallocate() }
        while next < buffers.count {
            // The buffers are pinned for the call: `withUnsafeBytes` on each, nested through
            // a recursive helper, would cost a closure per buffer; the arrays are kept alive by
            // `buffers` and not mutated, so their storage addresses stay valid during sendmsg.
            var count = 0
            var index = next
            while index < buffers.count, count < Self.gatheringBatch {
                let skip = index == next ? offset : 0
                let length = buffers[index].count - skip
                if length > 0 {
                    let base = buffers[index].withUnsafeBytes { $0.baseAddress! + skip }
                    vectors[count] = iovec(iov_base: UnsafeMutableRawPointer(mutating: base), iov_len: length)
                    count += 1
                }
                index += 1
            }
            if count == 0 { return (buffers.count, 0) }
            guard case .value(var sent) = try socket.send(gathering: UnsafeMutableBufferPointer(rebasing: vectors[0..<count])) else {
                break
            }
            // Advance over what went.
            while next < buffers.count {
                let remaining = buffers[next].count - offset
                if sent >= remaining {
                    sent -= remaining
                    next += 1
                    offset = 0
                    if sent == 0 && next >= index { break }
                } else {
                    offset += sent
                    sent = 0
                    break
                }
            }
            if next < index { break } // the kernel took part of the batch: its buffer is full
        }
        return (next, offset)
    }

    private func sendDirectly(_ bytes: [UInt8]) throws -> Int {
        var offset = 0
        while offset < bytes.count {
            let result = try bytes.withUnsafeBytes { raw in
                try socket.send(UnsafeRawBufferPointer(rebasing: raw[offset...]))
            }
            guard case .value(let count) = result else {
                break
            }
            offset += count
        }
        return offset
    }

    private func enqueue(_ bytes: [UInt8]) {
        pendingBytes += bytes.count
        // Small writes are merged so that a backlog of many messages is not one send each.
        if outbound.count > outboundHead, outbound[outbound.count - 1].count + bytes.count <= 64 << 10 {
            outbound[outbound.count - 1].append(contentsOf: bytes)
        } else {
            outbound.append(bytes)
        }
    }

    /// Sends as much of the outbound buffer as the kernel takes.
    private func flush() {
        let wasAboveThreshold = pendingBytes > drainedThreshold
        do {
            while outboundHead < outbound.count {
                let chunk = outbound[outboundHead]
                let offset = headOffset
                let result = try chunk.withUnsafeBytes { raw in
                    try socket.send(UnsafeRawBufferPointer(rebasing: raw[offset...]))
                }
                guard case .value(let count) = result else {
                    break
                }
                headOffset += count
                pendingBytes -= count
                if headOffset == chunk.count {
                    outbound[outboundHead] = []
                    outboundHead += 1
                    headOffset = 0
                }
            }
        } catch let error as PosixError {
            finish(.error(error))
            return
        } catch {
            preconditionFailure("unexpected error \(error)")
        }
        if outboundHead == outbound.count {
            outbound.removeAll(keepingCapacity: true)
            outboundHead = 0
        } else if outboundHead > 16 && outboundHead * 2 > outbound.count {
            outbound.removeFirst(outboundHead)
            outboundHead = 0
        }
        if pendingBytes == 0 && state == .flushingBeforeClose {
            flushedBeforeClose()
        } else {
            updateInterest()
            if wasAboveThreshold, pendingBytes <= drainedThreshold, isWritable { onDrained?() }
        }
    }

    // MARK: Closing

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

    private func startCloseTimer() {
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
    private func flushedBeforeClose() {
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

    // MARK: Readiness

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

    private func updateInterest() {
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

    private func handle(_ readiness: Readiness) {
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
    private func received(_ bytes: [UInt8]) {
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
