import WebSocket

// Feeds arbitrary bytes to the receiving side of a WebSocket connection, in both roles, with
// the default limits and with small ones, and checks what must hold whatever a peer sends:
//
// - nothing traps, and parsing ends (libFuzzer's -timeout catches a loop);
// - the events do not depend on how the bytes were chunked (RFC 6455 frames arrive over TCP
//   "in any chunking"): the whole input at once, split at points derived from the input, and
//   one byte at a time give the same events;
// - every limit holds (the default ones, and small ones derived from the input so that every
//   size meets a limit exactly for some input): no message larger than `maxMessageSize`, no
//   control payload over 125 bytes, no close reason over 123 bytes;
// - every `.send` is exactly one well-formed frame for the peer (a Pong echoing the Ping, or a
//   Close whose code matches the failure), and nothing follows `.closed` or `.failed`;
// - `FrameParser` on its own yields frames within the limits and in a legal order, its first
//   error is sticky, and re-encoding its frames parses back to the same frames.

/// Small limits derived from the input's hash, so that short inputs reach the 1009 paths and
/// every frame or message size is, for some input, exactly at or one past a limit.
private func smallLimits(_ hash: UInt64) -> WebSocketConfiguration {
    WebSocketConfiguration(
        maxMessageSize: 1 + Int((hash >> 8) & 0xFF) + Int((hash >> 16) & 0x3F),
        maxFrameSize: 1 + Int((hash >> 24) & 0xFF),
        maxFragments: 1 + Int((hash >> 32) & 0x7))
}

/// The fixed masking key of the client under test, so runs are reproducible.
private let maskingKey: UInt32 = 0x37FA_213D

/// libFuzzer's entry point: one input, checked in every role and configuration.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let hash = fnv1a(input)
    let points = splitPoints(of: input, hash: hash)
    for role in [WebSocketRole.server, .client] {
        for configuration in [WebSocketConfiguration(), smallLimits(hash &* 0x9E37_79B9_7F4A_7C15)] {
            let whole = receive(input, chunks: [], role: role, configuration: configuration, closeFirst: false)
            checkEvents(whole, role: role, configuration: configuration, weClosed: false)
            let split = receive(input, chunks: points, role: role, configuration: configuration, closeFirst: false)
            require(split == whole, "events depend on chunking at \(points): \(whole) vs \(split)")
            if input.count <= 64 {
                let bytewise = receive(
                    input, chunks: Array(0..<input.count), role: role,
                    configuration: configuration, closeFirst: false)
                require(bytewise == whole, "events differ when fed byte by byte: \(whole) vs \(bytewise)")
            }
            // The same bytes arriving after we started the closing handshake.
            let closing = receive(input, chunks: points, role: role, configuration: configuration, closeFirst: true)
            checkEvents(closing, role: role, configuration: configuration, weClosed: true)
            checkFrameParser(input, points: points, role: role, configuration: configuration)
        }
    }
    return 0
}

/// Traps with `message` (libFuzzer records the input as a crash) unless `condition` holds.
private func require(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
    if !condition() {
        fatalError("fuzz invariant violated: \(message())")
    }
}

/// The FNV-1a hash of the input: the same input always splits and limits the same way, and
/// different inputs differently.
private func fnv1a(_ input: [UInt8]) -> UInt64 {
    var hash: UInt64 = 0xCBF2_9CE4_8422_2325
    for byte in input {
        hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
    }
    return hash
}

/// Up to three cut points derived from the input's hash.
private func splitPoints(of input: [UInt8], hash: UInt64) -> [Int] {
    guard input.count > 1 else { return [] }
    var points: [Int] = []
    for shift in [0, 21, 42] as [UInt64] {
        points.append(Int((hash >> shift) & 0x1F_FFFF) % input.count)
    }
    return Array(Set(points)).sorted()
}

/// Feeds `input` cut at `chunks` (ascending offsets) to a fresh connection, draining
/// `nextEvent()` after every chunk, and returns all events.
private func receive(
    _ input: [UInt8], chunks: [Int], role: WebSocketRole,
    configuration: WebSocketConfiguration, closeFirst: Bool
) -> [WebSocketEvent] {
    var connection = WebSocketConnection(
        role: role, configuration: configuration,
        maskingKeySource: { maskingKey })
    var events: [WebSocketEvent] = []
    if closeFirst {
        let frame = connection.close(code: .goingAway, reason: "shutting down")
        require(!frame.isEmpty && connection.state == .closing, "close() did not start the closing handshake")
        require(connection.sendText("late").isEmpty, "a message was sent after our Close")
    }
    var start = 0
    for end in chunks + [input.count] where end >= start {
        input[start..<end].withUnsafeBytes { connection.append($0) }
        while let event = connection.nextEvent() {
            events.append(event)
            require(events.count <= 2 * input.count + 2, "more events than the input can explain")
        }
        start = end
    }
    switch events.last {
    case .closed?, .failed?:
        require(connection.state == .closed, "state is \(connection.state) after the connection ended")
        require(!connection.isAwaitingRestOfFrame, "a closed connection still awaits a frame")
    default:
        require(connection.state == (closeFirst ? .closing : .open), "state changed without an event")
    }
    return events
}

/// The role of the other end.
private func peer(of role: WebSocketRole) -> WebSocketRole {
    role == .server ? .client : .server
}

/// Parses bytes the connection asked us to send, as the peer would: exactly one frame.
private func sentFrame(_ bytes: [UInt8], by role: WebSocketRole) -> Frame {
    var parser = FrameParser(role: peer(of: role))
    parser.append(bytes)
    let frame: Frame?
    do {
        frame = try parser.next()
    } catch {
        fatalError("fuzz invariant violated: sent bytes are not a valid frame (\(error)): \(bytes)")
    }
    guard let frame else {
        fatalError("fuzz invariant violated: sent bytes are an incomplete frame: \(bytes)")
    }
    require((try? parser.next()) == nil && !parser.isInsideFrame, "sent bytes hold more than one frame")
    require(frame.fin && frame.opcode.isControl, "sent an unexpected \(frame.opcode) frame")
    return frame
}

/// Checks the limits and the event grammar of one run.
private func checkEvents(
    _ events: [WebSocketEvent], role: WebSocketRole,
    configuration: WebSocketConfiguration, weClosed: Bool
) {
    var previousSend: Frame?
    for (index, event) in events.enumerated() {
        require(index == events.count - 1 || !isTerminal(event), "events after the connection ended: \(events)")
        switch event {
        case .text(let text):
            require(text.utf8.count <= configuration.maxMessageSize, "text message over the limit")
        case .binary(let bytes):
            require(bytes.count <= configuration.maxMessageSize, "binary message over the limit")
        case .ping(let payload):
            require(payload.count <= 125, "ping payload over 125 bytes")
            if !weClosed {
                // RFC 6455 5.5.3: the Pong has "identical Application data" to the Ping.
                require(
                    previousSend?.opcode == .pong && previousSend?.payload == payload,
                    "ping not answered by a matching pong just before it")
            }
        case .pong(let payload):
            require(payload.count <= 125, "pong payload over 125 bytes")
        case .send(let bytes):
            let frame = sentFrame(bytes, by: role)
            require(frame.payload.count <= 125, "sent control frame over 125 bytes")
            if frame.opcode == .close {
                require(!weClosed, "a second Close frame was sent")
                require(frame.payload.count >= 2, "our Close frame has no status code")
                require(
                    index + 1 < events.count && isTerminal(events[index + 1]),
                    "our Close frame is not followed by the end of the connection")
            }
        case .closed(let code, let reason):
            require(reason.utf8.count <= 123, "close reason over 123 bytes")
            require(code.map(\.isValidOnWire) ?? true, "accepted close code \(String(describing: code))")
            if !weClosed {
                require(previousSend?.opcode == .close, "peer's Close not answered before .closed")
            }
        case .failed(let error):
            if !weClosed {
                require(previousSend?.opcode == .close, "failure without our Close frame first")
                let sent = previousSend.map { UInt16($0.payload[0]) << 8 | UInt16($0.payload[1]) }
                require(sent == error.closeCode.rawValue, "Close code \(String(describing: sent)) for \(error)")
            }
        }
        if case .send(let bytes) = event {
            previousSend = sentFrame(bytes, by: role)
        } else {
            previousSend = nil
        }
    }
}

/// `.closed` and `.failed` end a connection.
private func isTerminal(_ event: WebSocketEvent) -> Bool {
    switch event {
    case .closed, .failed: return true
    default: return false
    }
}

/// Runs `FrameParser` directly over `input` (cut at `points`) and checks its frames.
private func checkFrameParser(
    _ input: [UInt8], points: [Int], role: WebSocketRole,
    configuration: WebSocketConfiguration
) {
    var parser = FrameParser(role: role, configuration: configuration)
    var frames: [Frame] = []
    var failure: WebSocketError?
    var start = 0
    feeding: for end in points + [input.count] where end >= start {
        parser.append(Array(input[start..<end]))
        start = end
        while true {
            do {
                guard let frame = try parser.next() else { break }
                frames.append(frame)
                require(frames.count <= input.count / 2 + 1, "more frames than the input can hold")
            } catch let error as WebSocketError {
                failure = error
                break feeding
            } catch {
                fatalError("fuzz invariant violated: FrameParser threw \(error)")
            }
        }
    }
    if let failure {
        // The first violation is sticky.
        parser.append([0x81, 0x00])
        do {
            _ = try parser.next()
            fatalError("fuzz invariant violated: FrameParser recovered from \(failure)")
        } catch let again as WebSocketError {
            require(again == failure, "FrameParser threw \(again) after \(failure)")
        } catch {
            fatalError("fuzz invariant violated: FrameParser threw \(error)")
        }
    }
    // Limits and RFC 6455 5.4 ordering of what was accepted.
    var messageOpcode: Opcode?
    var messageLength = 0
    var fragments = 0
    for frame in frames {
        require(!frame.rsv1 && !frame.rsv2 && !frame.rsv3, "frame with reserved bits accepted")
        if frame.opcode.isControl {
            require(frame.fin && frame.payload.count <= 125, "bad control frame accepted: \(frame)")
            continue
        }
        require(frame.payload.count <= configuration.maxFrameSize, "frame over maxFrameSize accepted")
        if frame.opcode == .continuation {
            require(messageOpcode != nil, "continuation without a message accepted")
            messageLength += frame.payload.count
            fragments += 1
        } else {
            require(messageOpcode == nil, "new message inside a fragmented one accepted")
            messageOpcode = frame.opcode
            messageLength = frame.payload.count
            fragments = 1
        }
        require(messageLength <= configuration.maxMessageSize, "message over maxMessageSize accepted")
        require(fragments <= configuration.maxFragments, "message over maxFragments accepted")
        if frame.fin {
            messageOpcode = nil
        }
    }
    // What was accepted re-encodes (as the peer would send it) to bytes that parse back the same.
    var encoded: [UInt8] = []
    for frame in frames {
        encoded += FrameEncoder.encode(frame, maskingKey: role == .server ? MaskingKey(maskingKey) : nil)
    }
    var again = FrameParser(role: role, configuration: configuration)
    again.append(encoded)
    var reparsed: [Frame] = []
    do {
        while let frame = try again.next() {
            reparsed.append(frame)
        }
    } catch {
        fatalError("fuzz invariant violated: re-encoded frames fail to parse: \(error)")
    }
    require(reparsed == frames, "re-encoded frames parse differently")
}
