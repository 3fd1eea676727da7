import Dispatch
import EventLoopIO
import OrderStore

/// Reads that return many rows (the local API's pages of orders, journal entries and
/// rejections), read and encoded off the node's loop, as snapshot pages are
/// (`PagedSnapshotRead`; GRDB's `DatabasePool.asyncRead`): a page of 1,000 orders of 15 KB is
/// 15 MB of JSON, seconds of work that would hold every link, timer and other API client.
///
/// Each read is **pinned on the loop** when it is asked for: a reader connection begins its
/// read transaction there (`beginSnapshotRead`), so the read sees what is committed at that
/// moment (what `StoreWriter.read` would have shown, without a group still being committed)
/// and every statement of it sees the same state, whatever commits meanwhile. Its statements
/// and the encoding then run on a thread of the reads' queue, at most ``maxRunning`` at a time
/// (more wait, pinned, in arrival order); the answer comes back on the loop.
///
/// Loop-owned: every method runs on the loop; a pinned connection is used by one thread at a
/// time (the loop pins it, then only the read's thread uses it until it is handed back).
final class OffLoopReads {
    /// The most reads running at once; each holds a thread and a reader connection.
    static let maxRunning = 2
    /// Reader connections kept for the next reads.
    static let maxIdle = 2

    private let loop: EventLoop
    private let queue: DispatchQueue
    private var running = 0
    /// Reads pinned and waiting for a thread, in arrival order.
    private var waiting: [@Sendable () -> Void] = []
    /// Reader connections whose read ended, kept open for the next ones.
    private var idle: [PinnedRead] = []
    /// How many reads ran in all (tests and metrics).
    private(set) var readsStarted = 0

    /// Reads of `loop`'s store, run on `queue` (a concurrent queue of their own unless a test
    /// hands one in).
    init(loop: EventLoop, label: String, queue: DispatchQueue? = nil) {
        self.loop = loop
        self.queue = queue ?? DispatchQueue(label: "ordersync.\(label).reads", attributes: .concurrent)
    }

    /// Pins a read of `writer`'s store now, runs `body` with it off the loop, and hands its
    /// value (or error) to `finished` on the loop.
    func read<T: Sendable>(
        _ writer: StoreWriter, _ body: @escaping @Sendable (OrderDatabase) throws -> T,
        then finished: @escaping (Result<T, any Error>) -> Void
    ) {
        loop.assertInEventLoop()
        let pinned: PinnedRead
        do {
            pinned = try pin(writer)
        } catch {
            finished(.failure(error))
            return
        }
        let me = LoopBound(self, loop: loop)
        let done = LoopBound(finished, loop: loop)
        let loop = self.loop
        let job: @Sendable () -> Void = {
            let result = Result { try pinned.run(body) }
            pinned.end()
            loop.execute {
                me.value.ended(pinned)
                done.value(result)
            }
        }
        if running < Self.maxRunning { start(job) } else { waiting.append(job) }
    }

    private func start(_ job: @escaping @Sendable () -> Void) {
        running += 1
        readsStarted += 1
        queue.async(execute: job)
    }

    /// A read's thread is done with `pinned` (on the loop): the connection is kept or closed, and
    /// the next waiting read starts.
    private func ended(_ pinned: PinnedRead) {
        running -= 1
        if idle.count < Self.maxIdle { idle.append(pinned) } else { pinned.close() }
        if !waiting.isEmpty { start(waiting.removeFirst()) }
    }

    /// A reader connection (kept or new) with its read transaction begun now.
    private func pin(_ writer: StoreWriter) throws -> PinnedRead {
        let pinned = try idle.popLast() ?? PinnedRead(try writer.read { try OrderDatabase.openReader(of: $0) })
        do {
            try pinned.begin()
        } catch {
            pinned.close()
            throw error
        }
        return pinned
    }
}

/// A reader connection inside one read transaction, handed from the loop to one read's thread
/// and back.
final class PinnedRead: @unchecked Sendable {
    // @unchecked Sendable: used by one thread at a time: the loop begins the transaction before
    // the read is queued, only the read's thread uses it until `OffLoopReads.ended` runs on the
    // loop, which alone keeps or closes it.
    private let database: OrderDatabase

    init(_ database: OrderDatabase) { self.database = database }

    /// Begins the read transaction and fixes its view of the store now.
    func begin() throws { try database.beginSnapshotRead() }

    /// Runs `body` inside the read transaction.
    func run<T>(_ body: (OrderDatabase) throws -> T) rethrows -> T { try body(database) }

    /// Ends the read transaction.
    func end() { database.endSnapshotRead() }

    /// Closes the connection.
    func close() { database.close() }
}
