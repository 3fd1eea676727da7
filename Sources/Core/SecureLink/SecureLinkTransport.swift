import Noise

/// The transport phase of a secure link (Docs/SECURITY.md, "Transport messages"): each Noise
/// transport message carries one header byte and a chunk of an application message, or (header
/// bit `batched`) several whole application messages, each after its length.
struct SecureLinkTransport: Sendable {
    /// Header bit: more chunks of the same application message follow.
    static let moreFollows: UInt8 = 0x01
    /// Header bit: the sender rekeys its sending cipher after this message.
    static let rekeyAfter: UInt8 = 0x02
    /// Header bit: a control message for the link layer.
    static let controlMessage: UInt8 = 0x04
    /// Header bit: the chunk holds several whole sync messages, each after its length in
    /// `batchLengthBytes` bytes, big-endian (never with `moreFollows` or `controlMessage`).
    static let batched: UInt8 = 0x08
    /// Every bit the protocol defines.
    static let knownBits: UInt8 = moreFollows | rekeyAfter | controlMessage | batched
    /// The largest chunk: the Noise plaintext limit (65,535 minus the 16-byte tag) minus the header.
    static let maxChunkBytes = NoiseTransportSession.maxPlaintextLength - 1
    /// The length before each message of a batch.
    static let batchLengthBytes = 4

    /// A message being reassembled: its chunks so far and whether it is a control message.
    struct Partial: Sendable {
        var bytes: [UInt8]
        var control: Bool
    }

    var session: NoiseTransportSession
    let options: SecureLinkOptions
    /// Transport messages sent so far, counted for the rekey interval.
    var sentCount: UInt64 = 0
    /// The application message whose chunks are arriving, if one is.
    var partial: Partial?

    init(session: NoiseTransportSession, options: SecureLinkOptions) {
        self.session = session
        self.options = options
    }

    /// The transport messages carrying `message`, in order, each after the bytes `frameHeader`
    /// writes for it (a WebSocket frame header, or nothing): each is built in one buffer, its
    /// header byte and chunk copied once and encrypted in place, the tag appended.
    mutating func seal(
        _ message: [UInt8], control: Bool, frameHeader: SecureLink.FrameHeaderWriter
    ) throws(SecureLinkError) -> [[UInt8]] {
        guard message.count <= options.sealLimit else {
            throw SecureLinkError(
                .messageTooLarge, "a message of \(message.count) bytes exceeds the limit of \(options.sealLimit)")
        }
        var sealed: [[UInt8]] = []
        var start = 0
        repeat {
            let end = min(start + Self.maxChunkBytes, message.count)
            var header: UInt8 = control ? Self.controlMessage : 0
            if end < message.count { header |= Self.moreFollows }
            sealed.append(
                try sealOne(header: header, chunkBytes: end - start, frameHeader: frameHeader) { buffer in
                    buffer.append(contentsOf: message[start..<end])
                })
            start = end
        } while start < message.count
        return sealed
    }

    /// The transport messages carrying `messages` (sync messages), in order: as many whole
    /// messages in each as fit (`batched`), each after its length; a message too large to share
    /// one goes alone, in chunks, as `seal` sends it, and so does a batch of one.
    mutating func sealBatch(
        _ messages: [[UInt8]], frameHeader: SecureLink.FrameHeaderWriter
    ) throws(SecureLinkError) -> [[UInt8]] {
        if let large = messages.first(where: { $0.count > options.sealLimit }) {
            throw SecureLinkError(
                .messageTooLarge, "a message of \(large.count) bytes exceeds the limit of \(options.sealLimit)")
        }
        var sealed: [[UInt8]] = []
        var index = 0
        while index < messages.count {
            // The run of messages from `index` that fits one transport message.
            var end = index
            var chunkBytes = 0
            while end < messages.count, chunkBytes + Self.batchLengthBytes + messages[end].count <= Self.maxChunkBytes {
                chunkBytes += Self.batchLengthBytes + messages[end].count
                end += 1
            }
            guard end - index > 1 else {
                sealed += try seal(messages[index], control: false, frameHeader: frameHeader)
                index += 1
                continue
            }
            let run = messages[index..<end]
            sealed.append(
                try sealOne(header: Self.batched, chunkBytes: chunkBytes, frameHeader: frameHeader) { buffer in
                    for message in run {
                        for shift in stride(from: 8 * (Self.batchLengthBytes - 1), through: 0, by: -8) {
                            buffer.append(UInt8(truncatingIfNeeded: message.count >> shift))
                        }
                        buffer.append(contentsOf: message)
                    }
                })
            index = end
        }
        return sealed
    }

    /// One transport message: `frameHeader`'s bytes, then the header byte (with the rekey bit
    /// when this message is the interval's) and the `chunkBytes` that `chunk` appends, encrypted
    /// where they lie, the tag appended.
    private mutating func sealOne(
        header: UInt8, chunkBytes: Int, frameHeader: SecureLink.FrameHeaderWriter, chunk: (inout [UInt8]) -> Void
    ) throws(SecureLinkError) -> [UInt8] {
        sentCount += 1
        let rekey = options.rekeyInterval > 0 && sentCount % options.rekeyInterval == 0
        let sealedLength = 1 + chunkBytes + NoiseTransportSession.tagLength
        var buffer: [UInt8] = []
        buffer.reserveCapacity(SecureLink.maxFrameHeaderBytes + sealedLength)
        frameHeader(sealedLength, &buffer)
        precondition(buffer.count <= SecureLink.maxFrameHeaderBytes, "a frame header is 14 bytes at most")
        let plaintextStart = buffer.count
        buffer.append(rekey ? header | Self.rekeyAfter : header)
        chunk(&buffer)
        precondition(buffer.count == plaintextStart + 1 + chunkBytes, "a chunk of the length announced")
        do {
            try session.encrypt(inPlace: &buffer, from: plaintextStart)
            if rekey { try session.rekeySending() }
        } catch {
            throw SecureLinkError(.wrongState, "encrypting a transport message failed: \(error.message)")
        }
        return buffer
    }

    /// Decrypts one transport message; returns the application message it completes, if any.
    mutating func receive(_ message: [UInt8]) throws(SecureLinkError) -> [SecureLink.Event] {
        let plaintext: [UInt8]
        do {
            plaintext = try session.decrypt(message)
        } catch {
            switch error.code {
            case .badMessageLength, .messageTooLong:
                throw SecureLinkError(.malformed, "a transport message of \(message.count) bytes: \(error.message)")
            default:
                throw SecureLinkError(.authenticationFailed, "a transport message failed: \(error.message)")
            }
        }
        guard let header = plaintext.first else {
            throw SecureLinkError(.malformed, "a transport message has no header byte")
        }
        guard header & ~Self.knownBits == 0 else {
            throw SecureLinkError(.malformed, "a transport header has unknown bits: 0x\(String(header, radix: 16))")
        }
        if header & Self.batched != 0 {
            return try receiveBatch(plaintext, header: header)
        }
        let control = header & Self.controlMessage != 0
        var current = partial ?? Partial(bytes: [], control: control)
        guard current.control == control else {
            throw SecureLinkError(.malformed, "the chunks of one message disagree on the control bit")
        }
        guard current.bytes.count + plaintext.count - 1 <= options.maxMessageBytes else {
            throw SecureLinkError(
                .messageTooLarge, "a message exceeds the limit of \(options.maxMessageBytes) bytes as its chunks arrive")
        }
        current.bytes += plaintext[1...]
        rekeyReceivingIfAsked(header)
        guard header & Self.moreFollows == 0 else {
            partial = current
            return []
        }
        partial = nil
        return [current.control ? .control(current.bytes) : .message(current.bytes)]
    }

    /// A transport message of several whole sync messages (`batched`): each after its length,
    /// the lengths adding up to the chunk exactly; never inside a chunked message.
    private mutating func receiveBatch(_ plaintext: [UInt8], header: UInt8) throws(SecureLinkError) -> [SecureLink.Event] {
        guard header & (Self.moreFollows | Self.controlMessage) == 0, partial == nil else {
            throw SecureLinkError(
                .malformed, "a batch of messages with the header 0x\(String(header, radix: 16)) or inside a chunked message")
        }
        var events: [SecureLink.Event] = []
        var at = 1
        while at < plaintext.count {
            guard plaintext.count - at >= Self.batchLengthBytes else {
                throw SecureLinkError(.malformed, "a batch ends inside a message's length")
            }
            var length = 0
            for k in 0..<Self.batchLengthBytes { length = length << 8 | Int(plaintext[at + k]) }
            at += Self.batchLengthBytes
            guard length <= plaintext.count - at else {
                throw SecureLinkError(.malformed, "a batch's message of \(length) bytes runs past its end")
            }
            guard length <= options.maxMessageBytes else {
                throw SecureLinkError(.messageTooLarge, "a batch's message exceeds the limit of \(options.maxMessageBytes) bytes")
            }
            events.append(.message(Array(plaintext[at..<at + length])))
            at += length
        }
        guard !events.isEmpty else { throw SecureLinkError(.malformed, "an empty batch of messages") }
        rekeyReceivingIfAsked(header)
        return events
    }

    /// The sender rekeyed after this message (`rekeyAfter`): so does the receiving cipher.
    private mutating func rekeyReceivingIfAsked(_ header: UInt8) {
        guard header & Self.rekeyAfter != 0 else { return }
        do {
            try session.rekeyReceiving()
        } catch {
            preconditionFailure("a working session has no receiving cipher: \(error)")
        }
    }
}
