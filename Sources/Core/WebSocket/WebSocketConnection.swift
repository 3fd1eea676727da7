/// The RFC 6455 data-transfer and closing state machine of one connection, after the opening
/// handshake: bytes in, events out; messages in, bytes out. It never touches a socket or a
/// clock: the caller writes every `[UInt8]` it is given and closes TCP when told to.
///
/// A socket shell reads, calls `append`, then handles `nextEvent()` until it returns `nil`,
/// writing each `.send` and each reply in order, and closing TCP after `.closed` (server
/// immediately; client after the server did or a short timeout) or `.failed`.
///
/// ```
///   open ── close(code:reason:) ──▶ closing ── peer's Close ──▶ closed
///    │                                 └── protocol error (no second Close) ──▶ closed
///    ├── peer's Close (answered) ──────────────────────────────────────────────▶ closed
///    └── protocol error (our Close sent) ──────────────────────────────────────▶ closed
/// ```
public struct WebSocketConnection: Sendable {
    /// Where the connection is in its life.
    public enum State: Equatable, Sendable {
        /// Messages flow both ways.
        case open
        /// We sent a Close frame and wait for the peer's; no more messages may be sent, received
        /// ones are still delivered.
        case closing
        /// Both Close frames were exchanged, or the connection failed; nothing more is sent or
        /// read.
        case closed
    }

    /// Which end this is; decides the masking direction.
    public let role: WebSocketRole
    /// The limits in force (the message size may change, see `setMessageLimit(_:)`).
    public private(set) var configuration: WebSocketConfiguration
    /// The current state.
    public internal(set) var state: State = .open

    private var parser: FrameParser
    let maskingKeySource: @Sendable () -> UInt32

    // Properties used by the Closing and Sending extensions are internal.

    /// The fragmented message being assembled: its opcode and payload so far.
    var messageOpcode: Opcode?
    var messageBuffer: [UInt8] = []
    /// Validates the current text message across fragments and partial frames.
    private var utf8 = UTF8Validator()
    /// How many payload bytes of the text frame still arriving were already validated.
    private var validatedInPendingFrame = 0
    /// Events produced by the last frame and not yet returned by `nextEvent()` (at most two).
    private var pendingEvents: [WebSocketEvent] = []

    /// Creates the state machine for a connection whose opening handshake just succeeded.
    ///
    /// - Parameters:
    ///   - role: `.client` masks what it sends and refuses masked frames; `.server` the reverse.
    ///   - configuration: message, frame and fragment limits.
    ///   - maskingKeySource: a fresh 32-bit key per client frame. RFC 6455 5.3: "The masking key
    ///     needs to be unpredictable; thus, the masking key MUST be derived from a strong source
    ///     of entropy". Tests inject a fixed one.
    public init(
        role: WebSocketRole,
        configuration: WebSocketConfiguration = WebSocketConfiguration(),
        maskingKeySource: @escaping @Sendable () -> UInt32 = { UInt32.random(in: .min ... .max) }
    ) {
        self.role = role
        self.configuration = configuration
        self.parser = FrameParser(role: role, configuration: configuration)
        self.maskingKeySource = maskingKeySource
    }

    // MARK: - Receiving

    /// Sets the largest message (and frame) accepted from now on; a frame whose header announces
    /// more fails the connection with 1009 before its payload is buffered (see
    /// `FrameParser.setMessageLimit(_:)`).
    public mutating func setMessageLimit(_ bytes: Int) {
        parser.setMessageLimit(bytes)
        configuration.maxMessageSize = bytes
        configuration.maxFrameSize = bytes
    }

    /// Whether the peer started a frame (or a fragmented message) that has not completed yet.
    /// The socket shell uses it to bound how long a started frame may take.
    public var isAwaitingRestOfFrame: Bool {
        state != .closed && (parser.isInsideFrame || parser.isInFragmentedMessage)
    }

    /// Adds bytes read from the socket (any chunking); pull what they mean with `nextEvent()`.
    ///
    /// Bytes arriving after the connection closed (after the peer's Close frame, or after a
    /// failure) are ignored: RFC 6455 5.5.1 "The application MUST NOT send any more data frames
    /// after sending a Close frame", and nothing after a Close is meaningful.
    public mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// Adds bytes straight from a read buffer; pull what they mean with `nextEvent()`.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard state != .closed else { return }
        parser.append(bytes)
    }

    /// The next event from the bytes appended so far, `nil` when more bytes are needed.
    ///
    /// Frames are parsed lazily, one event at a time, so that whatever the caller sends while
    /// handling an event (the reply to a message) is written before a Close frame caused by
    /// later bytes of the same read: a peer that sends a message and then a malformed frame
    /// receives the reply and then the Close, in that order.
    public mutating func nextEvent() -> WebSocketEvent? {
        while pendingEvents.isEmpty && step() {}
        return pendingEvents.isEmpty ? nil : pendingEvents.removeFirst()
    }

    /// Appends `bytes` and returns every event they complete.
    ///
    /// Convenient when replies do not depend on the events (tests, a client that only
    /// consumes). A caller that answers messages inline should use `append` and `nextEvent()`
    /// instead: here all bytes are parsed before the caller sees the first event, so a later
    /// protocol error in the same bytes has already closed the connection and `sendText`
    /// returns nothing.
    public mutating func receive(_ bytes: [UInt8]) -> [WebSocketEvent] {
        append(bytes)
        var events: [WebSocketEvent] = []
        while let event = nextEvent() {
            events.append(event)
        }
        return events
    }

    /// Parses at most one frame into `pendingEvents`; `false` when nothing more can be done
    /// with the bytes at hand.
    private mutating func step() -> Bool {
        guard state != .closed else { return false }
        var events: [WebSocketEvent] = []
        defer { pendingEvents.append(contentsOf: events) }
        let frame: Frame?
        do {
            frame = try parser.next()
        } catch let error as WebSocketError {
            fail(error, into: &events)
            return false
        } catch {
            preconditionFailure("FrameParser throws only WebSocketError")
        }
        guard let frame else {
            validatePendingText(into: &events)
            return false
        }
        handle(frame, into: &events)
        return true
    }

    private mutating func handle(_ frame: Frame, into events: inout [WebSocketEvent]) {
        switch frame.opcode {
        case .text, .binary:
            // The parser has already refused a new message inside a fragmented one.
            messageOpcode = frame.opcode
            if frame.opcode == .text {
                guard validateText(frame.payload, final: frame.fin, into: &events) else { return }
            }
            if frame.fin {
                deliver(frame.opcode, frame.payload, into: &events)
            } else {
                messageBuffer = frame.payload
            }
        case .continuation:
            guard let opcode = messageOpcode else {
                preconditionFailure("FrameParser passed a continuation without a message")
            }
            if opcode == .text {
                guard validateText(frame.payload, final: frame.fin, into: &events) else { return }
            }
            messageBuffer.append(contentsOf: frame.payload)
            if frame.fin {
                let message = messageBuffer
                messageBuffer = []
                deliver(opcode, message, into: &events)
            }
        case .ping:
            // RFC 6455 5.5.2: "Upon receipt of a Ping frame, an endpoint MUST send a Pong frame
            // in response, unless it already received a Close frame." 5.5.3: "A Pong frame sent
            // in response to a Ping frame must have identical "Application data" as found in
            // the message body of the Ping frame being replied to."
            if state == .open {
                events.append(.send(encode(opcode: .pong, payload: frame.payload)))
            }
            events.append(.ping(frame.payload))
        case .pong:
            events.append(.pong(frame.payload))
        case .close:
            handleClose(frame.payload, into: &events)
        }
    }

    /// Validates the rest of a complete text frame, whose start may already have been checked
    /// while it was arriving.
    private mutating func validateText(_ payload: [UInt8], final: Bool, into events: inout [WebSocketEvent]) -> Bool {
        let start = validatedInPendingFrame
        validatedInPendingFrame = 0
        let valid = payload.withUnsafeBufferPointer { all in
            utf8.validate(buffer: UnsafeBufferPointer(rebasing: all[start...]))
        }
        guard valid else {
            fail(WebSocketError(.invalidUTF8, "text message is not valid UTF-8"), into: &events)
            return false
        }
        guard !final || utf8.isAtCharacterBoundary else {
            fail(WebSocketError(.invalidUTF8, "text message ends inside a UTF-8 sequence"), into: &events)
            return false
        }
        return true
    }

    /// Checks the part of a text frame received so far, so invalid UTF-8 fails the connection
    /// before the rest of the frame or message arrives.
    private mutating func validatePendingText(into events: inout [WebSocketEvent]) {
        guard let header = parser.pendingHeader,
            header.opcode == .text || (header.opcode == .continuation && messageOpcode == .text)
        else { return }
        let pending = parser.pendingPayload
        guard pending.count > validatedInPendingFrame else { return }
        let start = pending.startIndex + validatedInPendingFrame
        let valid = pending[start...].withUnsafeBufferPointer { utf8.validate(buffer: $0) }
        validatedInPendingFrame = pending.count
        if !valid {
            fail(WebSocketError(.invalidUTF8, "text message is not valid UTF-8"), into: &events)
        }
    }

    private mutating func deliver(_ opcode: Opcode, _ payload: [UInt8], into events: inout [WebSocketEvent]) {
        messageOpcode = nil
        utf8.reset()
        if opcode == .text {
            events.append(.text(String(decoding: payload, as: UTF8.self)))
        } else {
            events.append(.binary(payload))
        }
    }
}
