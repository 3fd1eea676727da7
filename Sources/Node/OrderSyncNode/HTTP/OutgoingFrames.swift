import WebSocketTransport

/// The frames each terminal gets from one batch of the engine's actions, gathered so that each
/// terminal's leave in one gathering write (`WebSocketChannel.sendEncoded(frames:)`), in order.
struct OutgoingFrames {
    private var frames: [Int: [[UInt8]]] = [:]
    private var sessions: [TerminalSession] = []

    /// A frame encoded beforehand (a StorePOS broadcast, shared by every StorePOS terminal).
    mutating func add(frame: [UInt8], to s: TerminalSession) {
        if frames[s.id] == nil {
            frames[s.id] = []
            sessions.append(s)
        }
        frames[s.id]?.append(frame)
    }

    /// A sync message: a text frame to a StorePOS terminal, sealed for a slave's secure link.
    mutating func add(_ bytes: [UInt8], to s: TerminalSession, node: MasterNode) {
        switch s.framing {
        case .storePOS:
            add(frame: WebSocketChannel.serverTextFrame(utf8: bytes), to: s)
        case .secure(let link):
            do {
                for frame in try link.sealFrames(bytes) { add(frame: frame, to: s) }
            } catch {
                flush(s)
                node.sealFailed(s, error)
            }
        case .none:
            return
        }
    }

    /// Sends what waits for `s` now (before closing its link).
    mutating func flush(_ s: TerminalSession) {
        guard let pending = frames.removeValue(forKey: s.id), !pending.isEmpty else { return }
        s.transport.sendEncoded(frames: pending)
    }

    /// Sends every terminal's frames, each terminal's in one write.
    mutating func flushAll() {
        for s in sessions { flush(s) }
        sessions = []
    }
}
