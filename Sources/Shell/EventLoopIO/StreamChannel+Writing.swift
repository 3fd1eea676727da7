import Glibc

/// Writing: what the owner writes goes to the kernel at once when nothing is pending, else waits
/// in the outbound buffer (bounded by `maxPendingBytes`) until the socket is writable; a drained
/// buffer calls `onDrained` (flow control).
extension StreamChannel {
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
    func writeToSocket(_ bytes: [UInt8]) {
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
        pendingChanged(progressed: false)
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
        pendingChanged(progressed: false)
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

    /// Sends `bytes` until the kernel takes no more; returns how many went.
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

    /// Adds `bytes` to the outbound buffer.
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
    func flush() {
        let wasAboveThreshold = pendingBytes > drainedThreshold
        let pendingBefore = pendingBytes
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
        if pendingBytes < pendingBefore && state == .flushingBeforeClose {
            closeProgressed()
        }
        pendingChanged(progressed: pendingBytes < pendingBefore)
        if pendingBytes == 0 && state == .flushingBeforeClose {
            flushedBeforeClose()
        } else {
            updateInterest()
            if wasAboveThreshold, pendingBytes <= drainedThreshold, isWritable { onDrained?() }
        }
    }
}
