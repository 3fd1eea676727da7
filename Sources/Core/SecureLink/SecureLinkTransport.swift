import Noise

/// The transport phase of a secure link (Docs/SECURITY.md, "Transport messages"): each Noise
/// transport message carries one header byte and a chunk of an application message.
struct SecureLinkTransport: Sendable {
    /// Header bit: more chunks of the same application message follow.
    static let moreFollows: UInt8 = 0x01
    /// Header bit: the sender rekeys its sending cipher after this message.
    static let rekeyAfter: UInt8 = 0x02
    /// Header bit: a control message for the link layer.
    static let controlMessage: UInt8 = 0x04
    /// Every bit the protocol defines.
    static let knownBits: UInt8 = moreFollows | rekeyAfter | controlMessage
    /// The largest chunk: the Noise plaintext limit (65,535 minus the 16-byte tag) minus the header.
    static let maxChunkBytes = NoiseTransportSession.maxPlaintextLength - 1

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
            sentCount += 1
            let rekey = options.rekeyInterval > 0 && sentCount % options.rekeyInterval == 0
            if rekey { header |= Self.rekeyAfter }
            let sealedLength = 1 + (end - start) + NoiseTransportSession.tagLength
            var buffer: [UInt8] = []
            buffer.reserveCapacity(SecureLink.maxFrameHeaderBytes + sealedLength)
            frameHeader(sealedLength, &buffer)
            precondition(buffer.count <= SecureLink.maxFrameHeaderBytes, "a frame header is 14 bytes at most")
            let plaintextStart = buffer.count
            buffer.append(header)
            buffer.append(contentsOf: message[start..<end])
            do {
                try session.encrypt(inPlace: &buffer, from: plaintextStart)
                if rekey { try session.rekeySending() }
            } catch {
                throw SecureLinkError(.wrongState, "encrypting a transport message failed: \(error.message)")
            }
            sealed.append(buffer)
            start = end
        } while start < message.count
        return sealed
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
        if header & Self.rekeyAfter != 0 {
            do {
                try session.rekeyReceiving()
            } catch {
                preconditionFailure("a working session has no receiving cipher: \(error)")
            }
        }
        guard header & Self.moreFollows == 0 else {
            partial = current
            return []
        }
        partial = nil
        return [current.control ? .control(current.bytes) : .message(current.bytes)]
    }
}
