import Noise

/// One end of a secure link (Docs/SECURITY.md, "The secure link protocol"): a Noise handshake
/// (`ordersync.pair.v1` with XXpsk3, `ordersync.ik.v1` with IK), then transport messages of one
/// header byte and a chunk each.
///
/// Pure: binary WebSocket messages in, events out; the caller moves the bytes. Any failure of a
/// received message moves the link to `.failed`, and every later call throws `.wrongState`.
///
/// ```swift
/// var (slave, events) = try SecureLink.knownInitiator(masterKey: trusted, localStatic: myKeys)
/// // send each .send(bytes) as a binary WebSocket message, feed every binary message to receive(_:)
/// ```
public struct SecureLink: Sendable {
    /// Where the link stands.
    public enum Phase: Sendable, Equatable {
        /// Handshake messages remain.
        case handshaking
        /// IK responder only: the initiator's key was presented; `accept(payload:)` or close.
        case awaitingAcceptance
        /// The handshake is done; `seal` and `receive` carry application messages.
        case established
        /// A message failed; every call throws `.wrongState`.
        case failed
    }

    /// What the caller does next, in order.
    public enum Event: Sendable, Equatable {
        /// A binary WebSocket message to send, in order.
        case send([UInt8])
        /// IK responder only: the initiator's static key; decide, then `accept(payload:)` or close.
        case peerKeyPresented(staticKey: [UInt8])
        /// The handshake is done: the peer's static key and the payload of its last handshake
        /// message.
        case established(peerStaticKey: [UInt8], peerPayload: [UInt8])
        /// One whole sync message (UTF-8 JSON).
        case message([UInt8])
        /// One whole control message for the link layer (UTF-8 JSON).
        case control([UInt8])
    }

    enum State: Sendable {
        /// An initiator waiting for message 2; for pairing, it then writes message 3 with
        /// `finalPayload`.
        case initiatorAwaitingResponse(NoiseHandshakeState, finalPayload: [UInt8]?)
        /// A pairing responder waiting for message 1, to answer with `payload`; `codes` are the
        /// psks of the codes it accepts.
        case pairingAwaitingFirst(NoiseHandshakeState, payload: [UInt8], codes: [[UInt8]])
        /// A pairing responder waiting for message 3, to read with each of `codes`.
        case pairingAwaitingFinal(NoiseHandshakeState, codes: [[UInt8]])
        /// A known responder waiting for message 1, holding the keys it answers to, in order.
        case knownAwaitingFirst(keys: [NoiseKeyPair])
        /// A known responder that read message 1 and waits for the caller's decision.
        case knownAwaitingAcceptance(NoiseHandshakeState, peerPayload: [UInt8])
        /// The handshake is done; the transport is `transport`.
        case established
        /// A message failed.
        case failed
    }

    var state: State
    /// The transport phase, while `.established` (nil otherwise). Kept outside `state` so that
    /// sealing and opening mutate it in place: taking it out of the enum and putting it back
    /// copied the whole state twice per message (about 1,000 instructions per sealed message).
    var transport: SecureLinkTransport?
    let options: SecureLinkOptions
    let random: NoiseRandomSource

    /// The peer's static key, once the handshake revealed it.
    public internal(set) var peerStaticKey: [UInt8]?
    /// Known responder: which of its `keys` the initiator addressed.
    public internal(set) var responderKeyIndex: Int?
    /// Pairing responder: which of its codes the initiator used, once established.
    public internal(set) var pairingCodeIndex: Int?
    /// The Noise handshake hash both sides share, once established.
    public internal(set) var handshakeHash: [UInt8]?

    init(state: State, options: SecureLinkOptions, random: NoiseRandomSource) {
        self.state = state
        self.options = options
        self.random = random
    }

    /// Where the link stands.
    public var phase: Phase {
        switch state {
        case .initiatorAwaitingResponse, .pairingAwaitingFirst, .pairingAwaitingFinal, .knownAwaitingFirst:
            return .handshaking
        case .knownAwaitingAcceptance: return .awaitingAcceptance
        case .established: return .established
        case .failed: return .failed
        }
    }

    /// Handles one binary WebSocket message from the peer. Any failure moves the link to
    /// `.failed`; every later call throws `.wrongState`.
    public mutating func receive(_ message: [UInt8]) throws(SecureLinkError) -> [Event] {
        let current = state
        state = .failed
        switch current {
        case .initiatorAwaitingResponse(let handshake, let finalPayload):
            return try initiatorRead(message, handshake: handshake, finalPayload: finalPayload)
        case .pairingAwaitingFirst(let handshake, let payload, let codes):
            return try pairingReadFirst(message, handshake: handshake, payload: payload, codes: codes)
        case .pairingAwaitingFinal(let handshake, let codes):
            return try pairingReadFinal(message, handshake: handshake, codes: codes)
        case .knownAwaitingFirst(let keys):
            return try knownReadFirst(message, keys: keys)
        case .knownAwaitingAcceptance:
            throw SecureLinkError(.wrongState, "a message arrived before the presented key was accepted")
        case .established:
            guard transport != nil else { throw SecureLinkError(.wrongState, "the link has no transport") }
            do throws(SecureLinkError) {
                let events = try transport!.receive(message)
                state = .established
                return events
            } catch {
                transport = nil
                throw error
            }
        case .failed:
            throw SecureLinkError(.wrongState, "the link has failed")
        }
    }

    /// Writes the bytes that go before one sealed transport message of `length` bytes into
    /// `output` (empty): a WebSocket frame header, so that the message is sealed inside its frame.
    public typealias FrameHeaderWriter = (_ length: Int, _ output: inout [UInt8]) -> Void

    /// The most a `FrameHeaderWriter` may write: a WebSocket header with a 64-bit length and a mask.
    public static let maxFrameHeaderBytes = 14

    /// Seals one application message (a sync message, or a control message when `control`) into
    /// the binary WebSocket messages to send, in order. Throws `.wrongState` before the handshake
    /// is done and `.messageTooLarge` (leaving the link working) for a message over
    /// `maxMessageBytes`.
    public mutating func seal(_ message: [UInt8], control: Bool = false) throws(SecureLinkError) -> [[UInt8]] {
        try seal(message, control: control) { _, _ in }
    }

    /// Seals one application message as `seal(_:control:)` does, each transport message written
    /// after what `frameHeader` writes for it: whole frames, with no copy between the sealing and
    /// the socket.
    public mutating func seal(
        _ message: [UInt8], control: Bool = false, frameHeader: FrameHeaderWriter
    ) throws(SecureLinkError) -> [[UInt8]] {
        try sealing { transport throws(SecureLinkError) in try transport.seal(message, control: control, frameHeader: frameHeader) }
    }

    /// Seals several sync messages, in order, as few transport messages as they fit in: whole
    /// messages share one (header bit `0x08`, Docs/SECURITY.md, "Transport messages"), so each
    /// costs its bytes and not a seal of its own. Only for a peer that said it reads batches
    /// (`SecureLinkFeatures.readsBatches`); a batch of one is sealed as `seal` seals it. Throws as
    /// `seal` does, `.messageTooLarge` for any message over the limit, before sealing anything.
    public mutating func sealBatch(
        _ messages: [[UInt8]], frameHeader: FrameHeaderWriter = { _, _ in }
    ) throws(SecureLinkError) -> [[UInt8]] {
        try sealing { transport throws(SecureLinkError) in try transport.sealBatch(messages, frameHeader: frameHeader) }
    }

    /// Runs `body` on the established transport; any failure but `.messageTooLarge` fails the link.
    private mutating func sealing(
        _ body: (inout SecureLinkTransport) throws(SecureLinkError) -> [[UInt8]]
    ) throws(SecureLinkError) -> [[UInt8]] {
        guard case .established = state, transport != nil else {
            throw SecureLinkError(.wrongState, "a link seals messages only once established")
        }
        do throws(SecureLinkError) {
            return try body(&transport!)
        } catch {
            if error.kind != .messageTooLarge {
                state = .failed
                transport = nil
            }
            throw error
        }
    }
}
