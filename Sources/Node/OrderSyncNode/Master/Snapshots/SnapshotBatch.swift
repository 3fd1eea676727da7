import SyncCore
import WebSocket
import WebSocketTransport

/// The snapshot parts one turn of `MasterNode.sendSnapshotParts` hands a terminal, written
/// together. A StorePOS app's connect sequence is a message of about 110 bytes per order (a
/// Remove each, Docs/PROTOCOL.md 4.2.1): its frames are encoded one after the other into one
/// buffer and leave in one write of up to `flushBytes`, instead of an array, a gathering entry
/// and a `sendmsg` each. Other actions (a slave's sealed parts, `ready`, logs, a close) go
/// through `MasterNode.perform` in their place, after the frames before them.
struct SnapshotBatch {
    /// A write leaves once this much is gathered.
    static let flushBytes = 64 * 1024
    /// At most this many parts are gathered before they leave (a slave's parts are large).
    static let maxParts = 1024

    private var frames: [UInt8] = []
    /// How many messages `frames` holds.
    private var frameCount = 0
    private var actions: [MasterEngine.Action] = []
    /// The parts gathered and not yet written.
    private(set) var parts = 0
    /// The bytes gathered and not yet written.
    private(set) var bytes = 0

    var isFull: Bool { parts >= Self.maxParts || bytes >= Self.flushBytes }

    /// Room left before the batch is full: parts, and bytes (at least 1).
    var roomParts: Int { max(1, Self.maxParts - parts) }
    var roomBytes: Int { max(1, Self.flushBytes - bytes) }

    /// Adds the actions of some parts for terminal `s`. On a StorePOS link an action other than
    /// a message to it (a log, a close) is carried out at once, after the frames before it.
    mutating func add(_ due: [MasterEngine.Action], for s: TerminalSession, node: MasterNode) {
        guard case .storePOS = s.framing else {
            for case .send(_, let payload) in due {
                bytes += payload.count
                parts += 1
            }
            actions += due
            return
        }
        for action in due {
            if case .send(let id, let payload) = action, id == s.id {
                bytes += payload.count
                parts += 1
                frameCount += 1
                // Room for a whole batch at once: the encoder reserves only what each frame needs.
                if frames.isEmpty { frames.reserveCapacity(Self.flushBytes + 16 * 1024) }
                payload.withUnsafeBytes { FrameEncoder.append(opcode: .text, payload: $0, maskingKey: nil, to: &frames) }
            } else {
                flushFrames(to: s)
                node.perform([action])
            }
        }
    }

    /// Writes what is gathered, in order.
    mutating func flush(to s: TerminalSession, node: MasterNode) {
        flushFrames(to: s)
        if !actions.isEmpty {
            let pending = actions
            actions = []
            node.perform(pending)
        }
        parts = 0
        bytes = 0
    }

    /// The frames gathered leave in one write.
    private mutating func flushFrames(to s: TerminalSession) {
        guard !frames.isEmpty else { return }
        s.transport.sendEncoded(frames, messages: frameCount)
        frames = []
        frameCount = 0
    }
}
