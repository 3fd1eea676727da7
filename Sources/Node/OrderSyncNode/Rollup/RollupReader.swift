import Foundation
import RollupCore

/// Reads and prepares the roll-up's batches on a thread of its own, so that reading the next
/// batch from SQLite, hashing it and building its column arrays overlaps the PostgreSQL round
/// trips of the one before (Docs/PERFORMANCE.md, "The roll-up into PostgreSQL"). The thread owns
/// a read-only connection to the store of its own (`RollupLocalJournal`), opened and used only
/// there: one owner per connection; the runner's connection (`plan`) is another.
///
/// The runner asks for the batch after a checkpoint (`batch(_:)`, waiting when it is not read
/// yet) and, while head office works on it, for the one after that (`prefetch(_:)`). A batch
/// read ahead serves only a request after the same seq with the same rolling hash and a limit
/// at least its own: anything else (a batch that did not commit, a checkpoint moved by another
/// roll-up) is read again.
final class RollupReader: @unchecked Sendable {
    // @unchecked: `state` is only touched under `condition`; the journal only on the thread.

    /// The batch after `after` (whose rolling hash is `rolling`), with no entry above `through`.
    struct Request: Equatable, Sendable {
        var after: Int64
        var rolling: [UInt8]
        var through: Int64

        /// Whether a batch read for `self` is the one `wanted` asks for: it starts at the same
        /// place and holds nothing above `wanted`'s limit (a limit that grew is served by a
        /// shorter batch; the next one takes the rest).
        func serves(_ wanted: Request) -> Bool {
            after == wanted.after && rolling == wanted.rolling && through <= wanted.through
        }
    }

    private enum State {
        /// Nothing asked for.
        case idle
        /// A request waits for the thread.
        case wanted(Request)
        /// The thread reads `reading`; `next` was asked for meanwhile.
        case reading(Request, next: Request?)
        /// Read, waiting for the runner to take it.
        case ready(Request, Result<RollupShipment, RollupFailure>)
        /// The roll-up ended: the thread stops.
        case closed

        /// The runner asks for `request` (taken or read ahead).
        mutating func ask(_ request: Request) {
            switch self {
            case .idle: self = .wanted(request)
            case .wanted(let waiting): if !waiting.serves(request) { self = .wanted(request) }
            case .reading(let current, _): self = .reading(current, next: current.serves(request) ? nil : request)
            case .ready(let read, _): if !read.serves(request) { self = .wanted(request) }
            case .closed: break
            }
        }

        /// The thread finished `request`: ready, unless another was asked for meanwhile.
        mutating func read(_ request: Request, _ result: Result<RollupShipment, RollupFailure>) {
            guard case .reading(let current, let next) = self, current == request else { return }
            if let next, !request.serves(next) {
                self = .wanted(next)
            } else {
                self = .ready(request, result)
            }
        }
    }

    private let condition = NSCondition()
    private var state = State.idle
    private let dataDirectory: String
    private let identity: RollupLocalJournal.Identity
    private let limits: RollupBatchLimits

    /// A reader of the store in `dataDirectory`, whose identity must stay `identity`; its thread
    /// starts at once and opens the store at its first request.
    init(dataDirectory: String, identity: RollupLocalJournal.Identity, limits: RollupBatchLimits) {
        self.dataDirectory = dataDirectory
        self.identity = identity
        self.limits = limits
        let thread = Thread { [self] in self.serve() }
        thread.name = "rollup-reader"
        thread.start()
    }

    /// The batch `request` asks for: the one read ahead when it serves, else read now (waiting
    /// for the thread). Throws `RollupFailure.local` when the journal cannot be read or has a hole.
    func batch(_ request: Request) throws(RollupFailure) -> RollupShipment {
        condition.lock()
        defer { condition.unlock() }
        state.ask(request)
        condition.broadcast()
        while true {
            switch state {
            case .ready(let read, let result) where read.serves(request):
                state = .idle
                return try result.get()
            case .closed: throw .local("the roll-up's reader is closed")
            default: condition.wait()
            }
        }
    }

    /// Starts reading `request` ahead, while the caller does something else.
    func prefetch(_ request: Request) {
        condition.lock()
        state.ask(request)
        condition.broadcast()
        condition.unlock()
    }

    /// Stops the thread (after the read in flight); the store is closed on it.
    func close() {
        condition.lock()
        state = .closed
        condition.broadcast()
        condition.unlock()
    }

    /// The thread: waits for a request, reads it without the lock, hands it over.
    private func serve() {
        var journal: RollupLocalJournal?
        condition.lock()
        while true {
            switch state {
            case .closed:
                condition.unlock()
                return
            case .wanted(let request):
                state = .reading(request, next: nil)
                condition.unlock()
                let result = Result { () throws(RollupFailure) in try read(request, journal: &journal) }
                condition.lock()
                state.read(request, result)
                condition.broadcast()
            default: condition.wait()
            }
        }
    }

    /// Reads and prepares one batch: at most `limits` of the entries after `request.after`, up to
    /// `request.through`, chained from `request.rolling`.
    private func read(_ request: Request, journal: inout RollupLocalJournal?) throws(RollupFailure) -> RollupShipment {
        if journal == nil {
            let opened = try RollupLocalJournal(dataDirectory: dataDirectory)
            guard opened.identity == identity else {
                throw .local("the store in \(dataDirectory) is no longer store \(identity.storeId), lineage \(identity.lineage)")
            }
            journal = opened
        }
        let candidates: [RollupEntry]
        do {
            candidates = try journal!.entries(after: request.after, through: request.through, limit: limits.maxEntries)
        } catch {
            journal = nil
            throw .local("cannot read the local journal: \(error)")
        }
        let entries = Array(candidates.prefix(limits.count(sizes: candidates.map(\.byteCount))))
        guard let batch = RollupBatch(entries: entries, after: request.after, rolling: request.rolling), !batch.rows.isEmpty
        else {
            throw .local("the local journal has a hole after seq \(request.after)")
        }
        return RollupShipment(batch)
    }
}
