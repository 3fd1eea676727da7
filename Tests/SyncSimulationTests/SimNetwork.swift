/// One end of a simulated link.
enum SimSide: String {
    case master
    case slave

    /// The other end.
    var other: SimSide { self == .master ? .slave : .master }
}

/// One direction of a link: a FIFO like a TCP stream. Messages arrive in order, each after its
/// own delay, never overtaking the one before.
final class SimPipe {
    struct Item {
        let id: UInt64
        /// The message; nil is the close marker of a graceful close (after everything queued).
        let text: String?
    }

    var queue: [Item] = []
    var lastDeliverAt: Int64 = 0
    /// False once the link was cut or its sender closed it: what is sent then is lost.
    var accepting = true
}

/// A WebSocket link between one slave and the master. `id` is the master's peer id.
final class SimConnection {
    let id: Int
    let slave: Int
    let toMaster = SimPipe()
    let toSlave = SimPipe()
    /// The master has learned that the link ended: it processes nothing more from it.
    var masterClosed = false
    /// The slave has learned that the link ended.
    var slaveClosed = false

    init(id: Int, slave: Int) {
        self.id = id
        self.slave = slave
    }

    func pipe(to side: SimSide) -> SimPipe { side == .master ? toMaster : toSlave }

    func closed(_ side: SimSide) -> Bool { side == .master ? masterClosed : slaveClosed }

    func setClosed(_ side: SimSide) {
        if side == .master { masterClosed = true } else { slaveClosed = true }
    }
}

/// The in-memory network: links as pairs of FIFOs with random delays, and the faults the
/// simulation injects into them (cuts that lose a random suffix of each direction and let each
/// end learn of the cut at its own later time, duplicated messages, long delays).
final class SimNetwork {
    let clock: SimEventQueue
    let rng: SimRandom
    /// Chance that a message is delivered twice (adjacent, on the same link).
    var duplicateChance = 0.0
    /// Chance that a message (and so everything queued behind it) is held back 100-1500 ms.
    var longDelayChance = 0.0
    /// A message arrived at `side` of the link.
    var onMessage: (SimConnection, SimSide, String) -> Void = { _, _, _ in }
    /// `side` learned that the link ended.
    var onClosed: (SimConnection, SimSide) -> Void = { _, _ in }

    private var nextConnectionId = 0
    private var nextMessageId: UInt64 = 0
    private(set) var sent = 0
    private(set) var delivered = 0
    private(set) var lost = 0
    private(set) var duplicated = 0
    private(set) var delayed = 0
    private(set) var cuts = 0
    private(set) var gracefulCloses = 0

    init(clock: SimEventQueue, rng: SimRandom) {
        self.clock = clock
        self.rng = rng
    }

    /// A new link from slave `slave` (both ends open).
    func open(slave: Int) -> SimConnection {
        nextConnectionId += 1
        return SimConnection(id: nextConnectionId, slave: slave)
    }

    /// Queues `text` from `from` to the other end; lost if the link no longer carries it.
    func send(_ text: String, on c: SimConnection, from: SimSide) {
        let to = from.other
        let pipe = c.pipe(to: to)
        sent += 1
        guard pipe.accepting, !c.closed(from) else {
            lost += 1
            return
        }
        enqueue(text, pipe, c, to)
        if rng.chance(duplicateChance) {
            duplicated += 1
            enqueue(text, pipe, c, to)
        }
    }

    private func enqueue(_ text: String?, _ pipe: SimPipe, _ c: SimConnection, _ to: SimSide) {
        var delay = rng.int(Int64(1)...12)
        if text != nil, rng.chance(longDelayChance) {
            delayed += 1
            delay += rng.int(Int64(100)...1500)
        }
        let at = max(clock.now + delay, pipe.lastDeliverAt)
        pipe.lastDeliverAt = at
        nextMessageId += 1
        let id = nextMessageId
        pipe.queue.append(SimPipe.Item(id: id, text: text))
        clock.schedule(at: at) { [unowned self] in self.deliver(id, c, to) }
    }

    private func deliver(_ id: UInt64, _ c: SimConnection, _ to: SimSide) {
        let pipe = c.pipe(to: to)
        // Cut away, or the receiver already knows the link ended.
        guard !c.closed(to), pipe.queue.first?.id == id else { return }
        let item = pipe.queue.removeFirst()
        if let text = item.text {
            delivered += 1
            onMessage(c, to, text)
        } else {
            learn(c, to)
        }
    }

    private func learn(_ c: SimConnection, _ side: SimSide) {
        guard !c.closed(side) else { return }
        c.setClosed(side)
        onClosed(c, side)
    }

    /// `side` closes the link normally: it stops reading at once; what it queued is still
    /// delivered, then the other end learns of the close.
    func closeGracefully(_ c: SimConnection, by side: SimSide) {
        gracefulCloses += 1
        c.setClosed(side)
        let out = c.pipe(to: side.other)
        if out.accepting {
            out.accepting = false
            enqueue(nil, out, c, side.other)
        }
        let back = c.pipe(to: side)
        back.accepting = false
        lost += back.queue.count
        back.queue.removeAll()
    }

    /// The link breaks: each direction delivers a random prefix of what it holds and loses the
    /// rest; each end learns of it at its own random later time (`dead` at once, silently: its
    /// process is gone). Until then an end may still be processing what arrived.
    func cut(_ c: SimConnection, dead: SimSide?, counted: Bool = true) {
        if counted { cuts += 1 }
        for side in [SimSide.master, .slave] {
            let p = c.pipe(to: side)
            p.accepting = false
            let keep = rng.int(0...p.queue.count)
            lost += p.queue.count - keep
            p.queue.removeLast(p.queue.count - keep)
        }
        if let d = dead { c.setClosed(d) }
        for side in [SimSide.master, .slave] where !c.closed(side) {
            let after = rng.int(Int64(10)...(side == .master ? 3000 : 1500))
            clock.schedule(after: after) { [unowned self] in self.learn(c, side) }
        }
    }
}
