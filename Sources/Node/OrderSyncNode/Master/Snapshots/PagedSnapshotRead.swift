import Dispatch
import EventLoopIO
import OrderStore
import SyncCore

/// The orders of the snapshots joining at one sequence, read a page at a time off the master's
/// loop (`Docs/PROTOCOL.md` 4.2, "How a snapshot is read").
///
/// A reader connection of its own holds one read transaction for the read's whole life; it is
/// begun on the loop (`pin`) at a moment the store holds exactly what the engine applied up
/// to `seq` (`SnapshotReads`), so every page is cut from the store at `seq` whatever commits
/// meanwhile. The count of orders, the removed orders and every page are read on the node's
/// snapshot queue (one thread for every snapshot read: terminals joining at once share reads by
/// sequence and queue behind each other instead of multiplying the master's work), handed to
/// the loop, and kept only while near the pages the terminals ask for (`window`): a joining
/// terminal costs the master a few pages of memory, whatever the store's size.
///
/// Loop-owned: every method but the reads themselves runs on the loop; the connection is used
/// only on the snapshot queue once pinned.
final class PagedSnapshotRead: SnapshotPages, @unchecked Sendable {
    // @unchecked Sendable: `SnapshotPages` is a Sendable protocol (streams are values the engine
    // keeps), but this object's state is read and changed on its loop only (asserted); the
    // queue's closures reach it through a `LoopBound`.
    /// Where a page starts: after the order with this `created` (milliseconds) and key.
    typealias PageStart = (createdMillis: Int64, key: String)
    /// The sequence the read stands at.
    let seq: Int64
    let pageSize: Int
    /// The pages kept: those asked for last and the ones read ahead of them.
    static let window = 4
    private let loop: EventLoop
    private let queue: DispatchQueue
    /// Called on the loop when the read opened, failed or brought a page.
    private let progressed: () -> Void
    private var state = State.waitingForStore
    /// The pages read and kept, by index.
    private var pages: [Int: [Order]] = [:]
    /// Where each page starts (after the last order of the page before), once known.
    private var starts: [Int: PageStart] = [:]
    /// Pages being read on the queue.
    private var reading: Set<Int> = []
    /// How many pages were read in all (a page asked for again after it was dropped counts again).
    private(set) var pagesRead = 0

    /// Where the read is.
    private enum State {
        /// Created while the store holds more or less than `seq` (a group in flight): `pin`
        /// waits for its commit.
        case waitingForStore
        /// The read transaction is open; its count and removed orders are being read.
        case opening(SnapshotReadConnection)
        /// Open: `count` orders, `removed` the StorePOS Removes after the orders' own.
        case open(SnapshotReadConnection, count: Int, removed: [String])
        /// Failed, or ended: no page will come.
        case failed(String)

        /// The read transaction was begun on `connection`.
        mutating func pinned(_ connection: SnapshotReadConnection) {
            guard case .waitingForStore = self else { preconditionFailure("a snapshot read pinned twice") }
            self = .opening(connection)
        }

        /// The count and the removed orders were read.
        mutating func opened(count: Int, removed: [String]) {
            guard case .opening(let connection) = self else { return }
            self = .open(connection, count: count, removed: removed)
        }

        /// The read cannot go on.
        mutating func failed(_ why: String) {
            if case .failed = self { return }
            self = .failed(why)
        }

        /// The connection, while there is one.
        var connection: SnapshotReadConnection? {
            switch self {
            case .opening(let c), .open(let c, _, _): return c
            case .waitingForStore, .failed: return nil
            }
        }
    }

    /// A read at `seq` in pages of `pageSize`, read on `queue`; `progressed` runs on `loop`
    /// each time it has more to give.
    init(seq: Int64, pageSize: Int, loop: EventLoop, queue: DispatchQueue, progressed: @escaping () -> Void) {
        self.seq = seq
        self.pageSize = max(1, pageSize)
        self.loop = loop
        self.queue = queue
        self.progressed = progressed
    }

    deinit {
        if let connection = state.connection { queue.async { connection.end() } }
    }

    var isPinned: Bool {
        if case .waitingForStore = state { return false }
        return true
    }

    var orderCount: Int? {
        if case .open(_, let count, _) = state { return count }
        return nil
    }

    var removedUUIDs: [String]? {
        if case .open(_, _, let removed) = state { return removed }
        return nil
    }

    var failure: String? {
        if case .failed(let why) = state { return why }
        return nil
    }

    /// Begins the read transaction on a new reader connection of `writer`'s store (on the
    /// loop, while the store holds exactly `seq`), then reads the count and the removed orders
    /// off the loop.
    func pin(_ writer: StoreWriter) {
        loop.assertInEventLoop()
        let connection: SnapshotReadConnection
        do {
            connection = try writer.beginSnapshotRead()
        } catch {
            abandon("\(error)")
            return
        }
        state.pinned(connection)
        let read = LoopBound(self, loop: loop)
        queue.async { [loop] in
            let result = Result { (try connection.orderCount(), try connection.removedUUIDs()) }
            loop.execute {
                let me = read.value
                switch result {
                case .success(let (count, removed)): me.state.opened(count: count, removed: removed)
                case .failure(let error): me.state.failed("\(error)")
                }
                me.request(0)
                me.progressed()
            }
        }
    }

    /// The read will not stand at `seq` (it could not begin, or its group was rolled back):
    /// nothing is read. The terminals are told in a loop turn of their own (this may be called
    /// while the engine starts their snapshot).
    func abandon(_ why: String) {
        state.failed(why)
        loop.runSoon { [weak self] in self?.progressed() }
    }

    func page(_ index: Int) -> [Order]? {
        loop.assertInEventLoop()
        guard orderCount != nil else { return nil }
        request(index + 1)
        if let page = pages[index] { return page }
        request(index)
        return nil
    }

    /// Reads page `index` unless it is kept, being read, past the end, or where it starts is not
    /// known yet (the page before it is read first: pages are asked for in order).
    private func request(_ index: Int) {
        guard case .open(let connection, let count, _) = state, index >= 0, index * pageSize < max(count, 1),
            pages[index] == nil, !reading.contains(index)
        else { return }
        let start: PageStart?
        if index == 0 {
            start = nil
        } else if let known = starts[index] {
            start = known
        } else {
            request(index - 1)
            return
        }
        reading.insert(index)
        let read = LoopBound(self, loop: loop)
        let limit = pageSize
        queue.async { [loop] in
            let result = Result { try connection.page(after: start, limit: limit) }
            loop.execute { read.value.arrived(result, index: index) }
        }
    }

    /// Page `index` was read (on the loop): kept, the pages far behind it dropped.
    private func arrived(_ result: Result<[Order], any Error>, index: Int) {
        reading.remove(index)
        switch result {
        case .failure(let error):
            state.failed("\(error)")
        case .success(let orders):
            pagesRead += 1
            pages[index] = orders
            if let last = orders.last { starts[index + 1] = (last.created.epochMillis, last.key) }
            for old in pages.keys where old < index + 1 - Self.window { pages[old] = nil }
        }
        progressed()
    }
}
