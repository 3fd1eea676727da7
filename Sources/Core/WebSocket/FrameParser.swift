/// An incremental RFC 6455 frame parser: append bytes as they arrive in any chunking, then call
/// `next()` until it returns `nil`.
///
/// Besides the framing rules of section 5.2 it enforces the fragmentation rules of 5.4 and the
/// configured limits, so every check that needs only the frame headers happens here, as soon as
/// the header bytes that decide it have arrived and before any payload memory is reserved. The
/// first violation is sticky: `next()` throws it again and further input is ignored.
public struct FrameParser: Sendable {
    // Stored properties used by the header parsing in FrameParser+Header.swift are internal.
    let role: WebSocketRole
    /// The limits in force; the message and frame sizes may change (`setMessageLimit(_:)`).
    private(set) var configuration: WebSocketConfiguration

    /// Received bytes not yet consumed, starting at `readIndex`.
    var buffer: [UInt8] = []
    var readIndex = 0

    /// Where the parser is in the frame stream.
    ///
    /// ```
    ///   awaitingHeader --header parsed--> payload(header, bytes) --payload complete--> awaitingHeader
    ///        |                                                               (the frame is returned)
    ///        +--violation or limit--> failed(error)  (sticky: every `next()` throws it again)
    /// ```
    private enum State {
        /// Waiting for (the rest of) the next frame's header.
        case awaitingHeader
        /// The frame whose payload is being collected, and its unmasked payload so far.
        case payload(FrameHeader, [UInt8])
        /// The first protocol violation or exceeded limit.
        case failed(WebSocketError)
    }

    /// The data message the frames belong to (RFC 6455 5.4).
    enum Message {
        /// No message started, or the last one ended with its final frame.
        case none
        /// A message started by a non-final text or binary frame: its opcode, and its length and
        /// frame count so far.
        case fragmented(opcode: Opcode, length: Int, fragments: Int)
    }

    private var state = State.awaitingHeader
    /// Maintained by the header parsing in FrameParser+Header.swift.
    var message = Message.none

    /// Buffers larger than this are released rather than kept for reuse once drained.
    private static let retainedCapacity = 64 * 1024
    /// The most payload memory reserved for a frame before its bytes arrive.
    private static let initialPayloadCapacity = 256 * 1024

    /// Creates a parser for frames received by an endpoint of `role`.
    public init(role: WebSocketRole, configuration: WebSocketConfiguration = WebSocketConfiguration()) {
        self.role = role
        self.configuration = configuration
    }

    /// Sets the largest message, and frame, accepted from now on: every frame header that has
    /// not been parsed yet is checked against it before any of its payload is buffered. A
    /// server lowers it until the peer has authenticated (a handshake message is a few hundred
    /// bytes) and raises it afterwards. The frame whose payload is arriving keeps the limit it
    /// was admitted under.
    public mutating func setMessageLimit(_ bytes: Int) {
        precondition(bytes > 0, "the message limit must be positive")
        configuration.maxMessageSize = bytes
        configuration.maxFrameSize = bytes
    }

    /// The header of the frame whose payload is still arriving, if any.
    public var pendingHeader: FrameHeader? {
        guard case .payload(let header, _) = state else { return nil }
        return header
    }

    /// The unmasked payload received so far of the frame described by `pendingHeader`.
    public var pendingPayload: ArraySlice<UInt8> {
        guard case .payload(_, let payload) = state else { return [] }
        return payload[...]
    }

    /// Whether bytes of a frame not yet complete have arrived (a header still arriving, or a
    /// payload still arriving). A peer that starts a frame and stalls is detected with this.
    public var isInsideFrame: Bool {
        if case .payload = state { return true }
        return readIndex < buffer.count
    }

    /// Whether a fragmented message has started and not yet received its final frame.
    public var isInFragmentedMessage: Bool {
        if case .fragmented = message { return true }
        return false
    }

    /// Adds received bytes.
    public mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// Adds received bytes straight from a read buffer.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        var rest = bytes
        switch state {
        case .failed:
            return
        case .payload where readIndex == buffer.count:
            // A large payload arriving in many reads goes straight into the payload buffer
            // instead of through `buffer`.
            let taken = absorbPayload(rest)
            rest = UnsafeRawBufferPointer(rebasing: rest[taken...])
        case .awaitingHeader, .payload:
            break
        }
        if !rest.isEmpty {
            buffer.append(contentsOf: rest)
        }
    }

    /// The next complete frame, `nil` if more bytes are needed.
    ///
    /// - Throws: `WebSocketError` for the first protocol violation or exceeded limit; every
    ///   later call throws it again.
    public mutating func next() throws -> Frame? {
        switch state {
        case .failed(let failure):
            throw failure
        case .awaitingHeader:
            do {
                guard let parsed = try parseHeader() else {
                    releaseConsumedBytes()
                    return nil
                }
                // The length was checked against the limits in parseHeader(). Reserve at most
                // `initialPayloadCapacity` up front so a peer announcing a large frame and then
                // stalling pins little memory; the array grows as the payload really arrives.
                var payload: [UInt8] = []
                payload.reserveCapacity(min(parsed.payloadLength, Self.initialPayloadCapacity))
                state = .payload(parsed, payload)
            } catch let error as WebSocketError {
                state = .failed(error)
                buffer = []
                readIndex = 0
                throw error
            }
        case .payload:
            break
        }
        if readIndex < buffer.count {
            let start = readIndex
            let end = buffer.count
            let taken = buffer.withUnsafeBytes { all in
                absorbPayload(UnsafeRawBufferPointer(rebasing: all[start..<end]))
            }
            readIndex += taken
        }
        releaseConsumedBytes()
        guard case .payload(let header, let payload) = state, payload.count == header.payloadLength else {
            return nil
        }
        state = .awaitingHeader
        return Frame(fin: header.fin, opcode: header.opcode, payload: payload)
    }

    /// Copies payload bytes of the current frame from `source`, unmasking them; returns how
    /// many were taken (none when no payload is being collected or it is complete).
    private mutating func absorbPayload(_ source: UnsafeRawBufferPointer) -> Int {
        guard case .payload(let header, var payload) = state else { return 0 }
        let count = min(source.count, header.payloadLength - payload.count)
        guard count > 0 else { return 0 }
        // The state lets go of the array while it grows, so appending does not copy it.
        state = .awaitingHeader
        let start = payload.count
        payload.append(contentsOf: UnsafeRawBufferPointer(rebasing: source[0..<count]))
        if let key = header.maskingKey {
            payload.withUnsafeMutableBytes { all in
                key.apply(
                    to: UnsafeMutableRawBufferPointer(rebasing: all[start..<(start + count)]),
                    payloadOffset: start)
            }
        }
        state = .payload(header, payload)
        return count
    }

    private mutating func releaseConsumedBytes() {
        guard readIndex > 0 else { return }
        if readIndex == buffer.count {
            if buffer.capacity > Self.retainedCapacity {
                buffer = []
            } else {
                buffer.removeAll(keepingCapacity: true)
            }
            readIndex = 0
        } else if readIndex >= 4096 && readIndex * 2 >= buffer.count {
            buffer.removeFirst(readIndex)
            readIndex = 0
        }
    }
}
