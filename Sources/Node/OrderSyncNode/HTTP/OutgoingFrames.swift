import WebSocketTransport

/// The frames each terminal gets from one batch of the engine's actions, gathered so that each
/// terminal's leave in one gathering write (`WebSocketChannel.sendEncoded(frames:)`), in order.
///
/// Each terminal written to in the batch has a slot, found by its id (`slot(of:in:)`): its
/// session is looked up in the node's table (and retained) once per batch, not once per frame.
/// A broadcast to fifty StorePOS terminals appends to fifty slots. A slave that reads batches
/// (`SecureTerminalLink.readsBatches`) has its sync messages sealed together when its slot is
/// sent: a group of broadcasts costs it one seal, not one per broadcast.
struct OutgoingFrames {
    /// Whose links fail when a message cannot be sealed.
    private unowned let node: MasterNode
    /// The terminals written to in this batch, in the order of their first frame.
    private var sessions: [TerminalSession] = []
    /// Each slot's frames, waiting for the batch's end (or the terminal's close).
    private var frames: [[[UInt8]]] = []
    /// Each slot's sync messages for a slave that reads batches, not sealed yet: sealed together
    /// when the slot is sent.
    private var unsealed: [[[UInt8]]] = []
    /// Each terminal's slot, by its id.
    private var slots: [Int: Int] = [:]

    init(node: MasterNode) {
        self.node = node
    }

    /// Terminal `id`'s slot, made the first time it is written to in this batch from `all` (the
    /// node's sessions); nil when no such terminal is connected.
    mutating func slot(of id: Int, in all: [Int: TerminalSession]) -> Int? {
        if let k = slots[id] { return k }
        guard let s = all[id] else { return nil }
        let k = sessions.count
        sessions.append(s)
        frames.append([])
        unsealed.append([])
        slots[id] = k
        return k
    }

    /// Whether the slot's terminal is a StorePOS app (it takes a broadcast's shared frame).
    func isStorePOS(_ k: Int) -> Bool {
        if case .storePOS = sessions[k].framing { return true }
        return false
    }

    /// A frame encoded beforehand: a StorePOS broadcast (one frame shared by every StorePOS
    /// terminal), a text frame, or one sealed for a slave's secure link.
    mutating func add(frame: [UInt8], at k: Int) {
        // Only StorePOS terminals and slaves that do not read batches get frames made
        // beforehand; a slave that does gets sync messages only, sealed when its slot is sent.
        assert(unsealed[k].isEmpty, "a frame behind sync messages not sealed yet")
        frames[k].append(frame)
    }

    /// A sync message: a text frame to a StorePOS terminal, sealed for a slave's secure link
    /// (later, with the slot's other sync messages, for a slave that reads batches).
    mutating func add(_ bytes: [UInt8], at k: Int) {
        let s = sessions[k]
        switch s.framing {
        case .storePOS:
            add(frame: WebSocketChannel.serverTextFrame(utf8: bytes), at: k)
        case .secure(let link) where link.readsBatches:
            unsealed[k].append(bytes)
        case .secure(let link):
            do {
                for frame in try link.sealFrames(bytes) { add(frame: frame, at: k) }
            } catch {
                flush(s.id)
                node.sealFailed(s, error)
            }
        case .none:
            return
        }
    }

    /// Seals the slot's waiting sync messages together. A failure closes the link, as a message
    /// that cannot be sealed does.
    private mutating func sealUnsealed(_ k: Int) {
        let messages = unsealed[k]
        unsealed[k] = []
        let s = sessions[k]
        guard case .secure(let link) = s.framing else { return }
        do {
            frames[k] += try link.sealBatchFrames(messages)
        } catch {
            flush(s.id)
            node.sealFailed(s, error)
        }
    }

    /// Sends what waits for terminal `id` now (before its link closes); what it is sent later
    /// in the batch is looked up again.
    mutating func flush(_ id: Int) {
        guard let k = slots.removeValue(forKey: id) else { return }
        send(k)
    }

    /// Sends every terminal's frames, each terminal's in one write.
    mutating func flushAll() {
        for k in sessions.indices { send(k) }
        sessions = []
        frames = []
        unsealed = []
        slots = [:]
    }

    private mutating func send(_ k: Int) {
        if !unsealed[k].isEmpty { sealUnsealed(k) }
        let pending = frames[k]
        frames[k] = []
        if !pending.isEmpty { sessions[k].transport.sendEncoded(frames: pending) }
    }
}
