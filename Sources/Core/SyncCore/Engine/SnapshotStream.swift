import JSON

/// One terminal's snapshot on its way, handed out a part at a time, with what must follow it.
///
/// The orders are read once, in one store read at `seq`, when the snapshot starts: every part
/// comes from that one consistent view, however many operations the master applies while the
/// parts go out. Those operations are held (`hold(_:)`) and follow the last part and `ready`, in
/// order; the terminal expects them there, since they carry sequence numbers above `seq`.
/// Pure: no I/O, the caller decides when the next part is due (flow control).
///
/// For a plain StorePOS terminal the Creates are preceded by Removes (`clearing`), one uuid per
/// message, so that an app holding orders from before ends with each order once. The app
/// handles each order it receives as a task of its own on a concurrent queue, so a Create
/// right after the Remove of the same uuid could overtake it (and crash the app on a duplicate
/// primary key): a `fence` of empty Removes (one task each on the app, no effect) follows the
/// Removes and follows the Creates, and the stream pauses after each fence (`isSettling`) until
/// the caller says the link has written everything and the settle time passed (`settle()`).
/// `Docs/PROTOCOL.md` 4.2.1 has the reasoning. Every message of the stream carries the
/// `snapshot` member, numbered over all of them.
public struct SnapshotStream: Sendable {
    /// The journal sequence the snapshot stands at.
    public let seq: Int64
    /// How many orders the snapshot holds.
    public var orderCount: Int { orders.count }
    /// How many Removes precede the Creates.
    public var clearingCount: Int { clearing.count }
    /// How many messages the snapshot takes: the Removes, the fence, the Creates (at least
    /// one, even when there is no order), the fence.
    public let parts: Int
    /// How many parts were handed out.
    public private(set) var sentParts = 0
    /// The messages held for the terminal while its snapshot goes out, oldest first.
    public private(set) var held: [[UInt8]] = []
    /// The UTF-8 bytes of `held`.
    public private(set) var heldBytes = 0

    private let orders: [Order]
    private let clearing: [String]
    private let chunk: Int
    private let epoch: String
    private let storeId: String
    private let applied: [String: Int64]
    private let sendsReady: Bool
    private let fence: Int
    /// The part counts after which the stream waits for `settle()`: after the first fence,
    /// and after the last part (before `ready` and the held messages). Empty without a fence.
    private let pauses: [Int]
    /// How many of `pauses` were passed.
    private var settled = 0
    /// The master's terms: its last part and `ready` carry them (`Docs/PROTOCOL.md` 7.1).
    public var terms: MasterTerms?
    /// Messages that go to the terminal before the first part (`diverged`): unlike what is
    /// held while the snapshot goes out, they must reach it before the snapshot does.
    public var lead: [[UInt8]] = []

    /// A stream of `orders` (as they stood at `seq`) in parts of `chunk`. `applied` (the
    /// terminal's waiting operations the snapshot already holds) goes with the last part;
    /// `sendsReady` adds `ready` after it (OrderSync terminals, not StorePOS ones). `clearing`
    /// are the uuids to remove first, one Remove message each, in this order (StorePOS
    /// terminals only). `fence` empty Removes follow the Removes and the Creates, each fence
    /// followed by a pause (StorePOS terminals only).
    public init(
        orders: [Order], seq: Int64, chunk: Int, epoch: String, storeId: String, applied: [String: Int64] = [:],
        sendsReady: Bool, clearing: [String] = [], fence: Int = 0
    ) {
        self.orders = orders
        self.clearing = clearing
        self.seq = seq
        self.chunk = max(1, chunk)
        self.fence = max(0, fence)
        let creates = max(1, (orders.count + self.chunk - 1) / self.chunk)
        self.parts = clearing.count + 2 * self.fence + creates
        self.pauses = self.fence > 0 ? [clearing.count + self.fence, parts] : []
        self.epoch = epoch
        self.storeId = storeId
        self.applied = applied
        self.sendsReady = sendsReady
    }

    /// True once every part was handed out and the last pause passed.
    public var isComplete: Bool { sentParts == parts && !isSettling }

    /// True while the stream waits at a pause: the parts before it must reach the app and be
    /// handled there before anything after it goes (`settle()`).
    public var isSettling: Bool { settled < pauses.count && sentParts == pauses[settled] }

    /// Whether the Create of the order with this key (`Order.key`) was handed out (false for
    /// an order the snapshot does not hold).
    public func hasHandedOut(_ key: String) -> Bool {
        guard let index = orders.firstIndex(where: { $0.key == key }) else { return false }
        return sentParts > clearing.count + fence + index / chunk
    }

    /// Passes the pause the stream waits at (nothing when it waits at none).
    public mutating func settle() {
        if isSettling { settled += 1 }
    }

    /// The next part's message, or nil when every part was handed out or the stream waits at a
    /// pause.
    public mutating func nextPart() -> [UInt8]? {
        guard sentParts < parts, !isSettling else { return nil }
        if sentParts < clearing.count {
            let uuid = clearing[sentParts]
            sentParts += 1
            return removeMessage([.object(JSONObject([("uuid", .string(uuid))]))])
        }
        if sentParts < clearing.count + fence || sentParts >= parts - fence {
            sentParts += 1
            return removeMessage([])
        }
        let created = sentParts - clearing.count - fence
        let start = min(orders.count, created * chunk)
        let end = min(orders.count, start + chunk)
        sentParts += 1
        var part = SnapshotPart(seq: seq, part: sentParts, parts: parts, epoch: epoch, applied: sentParts == parts ? applied : [:])
        if sentParts == parts, let t = terms {
            part.term = t.term(ofSeq: seq)
            part.termStarts = t.starts
        }
        return ServerMessage.applied(
            operation: .create, orders: Array(orders[start..<end]), seq: nil, opId: nil, origin: nil, snapshot: part
        ).encodedBytes()
    }

    /// `{"operation":2,"orders":[{"uuid":…}],"snapshot":{…}}`: one uuid only, since a StorePOS
    /// app applies a Remove naming k orders only while it holds at least k; or none (a fence
    /// message: one task on the app that changes nothing).
    private func removeMessage(_ orders: [JSONValue]) -> [UInt8] {
        var part = JSONObject()
        part["seq"] = .int(seq)
        part["part"] = .int(Int64(sentParts))
        part["parts"] = .int(Int64(parts))
        part["epoch"] = .string(epoch)
        var message = JSONObject()
        message["operation"] = .int(Int64(OperationKind.remove.rawValue))
        message["orders"] = .array(orders)
        message["snapshot"] = .object(part)
        return JSONValue.object(message).serializedBytes()
    }

    /// Every part still to go, passing the pauses (no flow control: tests, and callers that
    /// send a snapshot at once).
    public mutating func allParts() -> [[UInt8]] {
        var messages: [[UInt8]] = []
        while !isComplete {
            if isSettling { settle() } else if let part = nextPart() { messages.append(part) }
        }
        return messages
    }

    /// Keeps `bytes` (one message) for after the snapshot.
    public mutating func hold(_ bytes: [UInt8]) {
        held.append(bytes)
        heldBytes += bytes.count
    }

    /// What follows the last part: `ready` (for an OrderSync terminal), then the held messages.
    /// Empties the held messages.
    public mutating func finish() -> [[UInt8]] {
        var tail: [[UInt8]] = []
        if sendsReady {
            tail.append(
                terms?.readyBytes(seq: seq, epoch: epoch, store: storeId)
                    ?? ServerMessage.ready(seq: seq, epoch: epoch, store: storeId).encodedBytes())
        }
        tail += held
        held = []
        heldBytes = 0
        return tail
    }
}
