import JSON

/// One terminal's snapshot on its way, handed out a part at a time, with what must follow it.
///
/// The orders come from one view of the store at `seq` (`SnapshotPages`: read whole, or a page
/// at a time from one read transaction off the loop): every part comes from that one
/// consistent view, however many operations the master applies while the parts go out. Those operations are held (`hold(_:)`) and follow the last part and `ready`, in
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
    /// How many orders the snapshot holds (0 while its read is opening).
    public var orderCount: Int { source.orderCount ?? 0 }
    /// How many Removes precede the Creates (0 while the read is opening).
    public var clearingCount: Int { layout?.clearing ?? 0 }
    /// How many messages the snapshot takes: the Removes, the fence, the Creates (at least
    /// one, even when there is no order), the fence (0 while the read is opening).
    public var parts: Int { layout?.parts ?? 0 }
    /// How many parts were handed out.
    public private(set) var sentParts = 0
    /// The messages held for the terminal while its snapshot goes out, oldest first.
    public private(set) var held: [[UInt8]] = []
    /// The UTF-8 bytes of `held`.
    public private(set) var heldBytes = 0

    /// The orders, a page at a time (a page per Create message).
    private let source: any SnapshotPages
    /// True when every order of the snapshot is removed first (a StorePOS app's connect
    /// sequence), before `extraClearing`.
    private let clearsOrders: Bool
    /// The uuids removed after the orders' own: given, or the source's removed orders.
    private var extraClearing: [String]?
    private let epoch: String
    private let storeId: String
    private let applied: [String: Int64]
    private let sendsReady: Bool
    private let fence: Int
    /// The parts' numbering, known once the source is open (it knows how many orders it holds).
    private var layout: Layout?
    /// How many of the layout's pauses were passed.
    private var settled = 0
    /// The last order handed out in a Create (`created` in milliseconds, key), for
    /// `hasHandedOut(_:)` on a paged source.
    private var lastHandedOut: (millis: Int64, key: String)?
    /// The page the Removes of the orders are being cut from.
    private var clearingPage: (index: Int, orders: [Order])?
    /// Orders created by operations applied since `seq` (keys): the snapshot does not hold them.
    private var createdSince: Set<String> = []
    /// The master's terms: its last part and `ready` carry them (`Docs/PROTOCOL.md` 7.1).
    public var terms: MasterTerms?
    /// Messages that go to the terminal before the first part (`diverged`): unlike what is
    /// held while the snapshot goes out, they must reach it before the snapshot does.
    public var lead: [[UInt8]] = []

    /// How the parts are numbered: the Removes, a fence, the Creates, a fence.
    private struct Layout {
        /// How many Removes (one uuid each) go first.
        let clearing: Int
        /// How many parts in all.
        let parts: Int
        /// The empty Removes of each fence.
        let fence: Int
        /// The part counts after which the stream waits for `settle()`: after the first fence,
        /// and after the last part (before `ready` and the held messages). Empty without a fence.
        let pauses: [Int]
    }

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
        self.init(
            pages: LoadedSnapshotPages(orders: orders, pageSize: chunk), seq: seq, epoch: epoch, storeId: storeId,
            applied: applied, sendsReady: sendsReady, clearsOrders: false, clearing: clearing, fence: fence)
    }

    /// A stream of the orders `pages` holds (as they stood at `seq`), a Create message per
    /// page. `clearsOrders` puts first a Remove of each of those orders and then of each of
    /// `clearing` (nil: the source's `removedUUIDs`), one uuid per message (StorePOS terminals
    /// only). Otherwise as `init(orders:…)`.
    public init(
        pages: any SnapshotPages, seq: Int64, epoch: String, storeId: String, applied: [String: Int64] = [:],
        sendsReady: Bool, clearsOrders: Bool, clearing: [String]? = nil, fence: Int = 0
    ) {
        self.source = pages
        self.clearsOrders = clearsOrders
        self.extraClearing = clearing ?? (clearsOrders ? nil : [])
        self.seq = seq
        self.fence = max(0, fence)
        self.epoch = epoch
        self.storeId = storeId
        self.applied = applied
        self.sendsReady = sendsReady
        open()
    }

    /// Numbers the parts once the source knows its orders (nothing before, or once done).
    private mutating func open() {
        guard layout == nil, let opened = openedLayout() else { return }
        extraClearing = extraClearing ?? source.removedUUIDs
        layout = opened
    }

    /// The parts' numbering: the layout, or the one the source allows now (nil while it opens).
    private func openedLayout() -> Layout? {
        if let layout { return layout }
        guard let count = source.orderCount, let pageCount = source.pageCount,
            let extra = extraClearing ?? source.removedUUIDs
        else { return nil }
        let clearing = (clearsOrders ? count : 0) + extra.count
        // Without an order to create, no Create can overtake a Remove: no fence, no wait.
        let fence = clearsOrders && count == 0 ? 0 : self.fence
        let parts = clearing + 2 * fence + pageCount
        return Layout(clearing: clearing, parts: parts, fence: fence, pauses: fence > 0 ? [clearing + fence, parts] : [])
    }

    /// The empty Removes of each fence (0 while opening).
    private var fenceParts: Int { layout?.fence ?? 0 }

    /// True while the next part waits for the source: its read is opening, or the page the
    /// part is cut from is being read. The caller asks again when the source says it has more.
    public var isReading: Bool {
        guard source.failure == nil else { return false }
        guard let layout = openedLayout() else { return true }
        guard let page = pageNeeded(layout) else { return false }
        return source.page(page) == nil
    }

    /// Why the snapshot's read failed, once it did: the terminal cannot get its snapshot.
    public var readFailure: String? { source.failure }

    /// The page the next part is cut from, if it needs one.
    private func pageNeeded(_ layout: Layout) -> Int? {
        guard sentParts < layout.parts, !isSettling else { return nil }
        let count = source.orderCount ?? 0
        if clearsOrders, sentParts < count { return sentParts / source.pageSize }
        let created = sentParts - layout.clearing - layout.fence
        return created >= 0 && sentParts < layout.parts - layout.fence ? created : nil
    }

    /// True once every part was handed out and the last pause passed.
    public var isComplete: Bool { layout.map { sentParts == $0.parts } == true && !isSettling }

    /// True while the stream waits at a pause: the parts before it must reach the app and be
    /// handled there before anything after it goes (`settle()`).
    public var isSettling: Bool {
        guard let pauses = layout?.pauses else { return false }
        return settled < pauses.count && sentParts == pauses[settled]
    }

    /// Whether the Create of `order` (as the store holds it now) was handed out: false for an
    /// order the snapshot does not hold. Exact on a source read whole; on a paged one, an order
    /// created since `seq` (`noteCreated(_:)`) is not held, and any other is compared by its
    /// place in the snapshot's order (`created`, then key) with the last order handed out.
    public func hasHandedOut(_ order: Order) -> Bool {
        guard let layout else { return false }
        if let loaded = source as? LoadedSnapshotPages {
            guard let index = loaded.index(ofKey: order.key) else { return false }
            return sentParts > layout.clearing + fenceParts + index / source.pageSize
        }
        guard !createdSince.contains(order.key), let last = lastHandedOut else { return false }
        return (order.created.epochMillis, order.key) <= (last.millis, last.key)
    }

    /// Orders with these keys were created by an operation applied after `seq`: the snapshot
    /// does not hold them (`hasHandedOut(_:)`).
    public mutating func noteCreated(_ keys: [String]) {
        createdSince.formUnion(keys)
    }

    /// Passes the pause the stream waits at (nothing when it waits at none).
    public mutating func settle() {
        if isSettling { settled += 1 }
    }

    /// The next part's message, or nil when every part was handed out, the stream waits at a
    /// pause, or the next part's orders are still being read (`isReading`).
    public mutating func nextPart() -> [UInt8]? {
        open()
        guard let layout, sentParts < layout.parts, !isSettling else { return nil }
        let count = source.orderCount ?? 0
        if sentParts < layout.clearing {
            let uuid: String
            if clearsOrders, sentParts < count {
                // The page is asked for once, not once per Remove.
                let index = sentParts / source.pageSize
                if clearingPage?.index != index {
                    guard let page = source.page(index) else { return nil }
                    clearingPage = (index, page)
                }
                uuid = clearingPage?.orders[sentParts % source.pageSize].uuid ?? ""
                if sentParts + 1 == count { clearingPage = nil }
            } else {
                uuid = (extraClearing ?? [])[sentParts - (clearsOrders ? count : 0)]
            }
            sentParts += 1
            return removeMessage(uuid: uuid)
        }
        if sentParts < layout.clearing + fenceParts || sentParts >= layout.parts - fenceParts {
            sentParts += 1
            return removeMessage(uuid: nil)
        }
        guard let orders = source.page(sentParts - layout.clearing - fenceParts) else { return nil }
        if let last = orders.last { lastHandedOut = (last.created.epochMillis, last.key) }
        sentParts += 1
        var part = SnapshotPart(
            seq: seq, part: sentParts, parts: layout.parts, epoch: epoch, applied: sentParts == layout.parts ? applied : [:])
        if sentParts == layout.parts, let t = terms {
            part.term = t.term(ofSeq: seq)
            part.termStarts = t.starts
        }
        return ServerMessage.snapshotCreateBytes(orders: orders, part: part)
            ?? ServerMessage.applied(operation: .create, orders: orders, seq: nil, opId: nil, origin: nil, snapshot: part)
            .encodedBytes()
    }

    /// `{"operation":2,"orders":[{"uuid":…}],"snapshot":{…}}`: one uuid only, since a StorePOS
    /// app applies a Remove naming k orders only while it holds at least k; or none (a fence
    /// message: one task on the app that changes nothing). Written straight into one buffer,
    /// the bytes `JSONValue` would serialize for the same members: a connect sequence sends one
    /// per order (`SnapshotStreamTests` compares the two).
    private func removeMessage(uuid: String?) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(96 + epoch.utf8.count + (uuid?.utf8.count ?? 0))
        if let uuid {
            out.append(contentsOf: #"{"operation":2,"orders":[{"uuid":"#.utf8)
            JSONValue.appendSerialized(string: uuid, to: &out)
            out.append(contentsOf: #"}],"#.utf8)
        } else {
            out.append(contentsOf: #"{"operation":2,"orders":[],"#.utf8)
        }
        ServerMessage.appendSnapshotMember(seq: seq, part: sentParts, parts: parts, epoch: epoch, to: &out)
        out.append(contentsOf: "}".utf8)
        return out
    }

    /// Every part still to go, passing the pauses (no flow control: tests, and callers that
    /// send a snapshot at once).
    public mutating func allParts() -> [[UInt8]] {
        var messages: [[UInt8]] = []
        while !isComplete {
            if isSettling {
                settle()
            } else if let part = nextPart() {
                messages.append(part)
            } else {
                // A source read whole never makes the stream wait: only a failed read ends here.
                break
            }
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
