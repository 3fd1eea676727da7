import EventLoopIO
import JSON
import Logging
import NodePolicy
import SyncCore

/// Where a node's change feed comes from: the master's journal, or a slave's feed table.
/// Everything it answers is on disk.
protocol ChangeFeedSource: AnyObject {
    /// The database the cursors belong to.
    func feedEpoch() throws -> String
    /// The lowest cursor still answerable, and the last change's seq.
    func feedBounds() throws -> (oldest: Int64, last: Int64)
    /// Up to `limit` changes after `seq`, oldest first, as `{"seq":N,...}` text.
    func feedChanges(after seq: Int64, limit: Int) throws -> [(seq: Int64, text: String)]
}

/// The change feed of one node (Docs/API.md, "Change feed"): answers `GET /v1/changes`, parks
/// long-polls until a change is committed or their timeout passes, and keeps server-sent event
/// streams going. All on the node's loop: nothing here blocks it.
final class ChangeFeedHub {
    private struct Waiter {
        var since: Int64
        var limit: Int
        var sink: ChangesSink
        var timer: TimerHandle?
    }

    private struct Stream {
        var cursor: Int64
        var sink: ChangesSink
    }

    /// Seconds between keepalive comments on an idle stream.
    static let keepaliveInterval: Duration = .seconds(15)
    /// A stream whose reader leaves this much unread is closed (it resumes with Last-Event-ID).
    static let streamBacklogLimit = 8 << 20

    private let loop: EventLoop
    private let logger: Logger
    private let source: ChangeFeedSource
    private var waiters: [Int: Waiter] = [:]
    private var streams: [Int: Stream] = [:]
    private var nextId = 0
    private var keepalive: TimerHandle?

    init(loop: EventLoop, logger: Logger, source: ChangeFeedSource) {
        self.loop = loop
        self.logger = logger
        self.source = source
    }

    /// Readers waiting or streaming, for tests and status.
    var readerCount: Int { waiters.count + streams.count }

    func handle(_ r: ChangesRequest, _ sink: ChangesSink) {
        let epoch: String
        let bounds: (oldest: Int64, last: Int64)
        do {
            epoch = try source.feedEpoch()
            bounds = try source.feedBounds()
        } catch {
            sink.answer(500, LocalAPIRoute.errorBody(code: "storage_failed", message: "could not read the change feed: \(error)"))
            return
        }
        let headers = [("OrderSync-Epoch", epoch)]
        if case .resnapshotRequired(let why) = ChangeFeed.check(
            since: r.since, epoch: r.epoch, nodeEpoch: epoch, oldest: bounds.oldest, last: bounds.last)
        {
            var e = JSONObject()
            e["code"] = .string("resnapshot_required")
            e["message"] = .string(why + "; reload every order (GET /v1/orders) and then follow the feed from \"last\"")
            e["oldest"] = .int(bounds.oldest)
            e["last"] = .int(bounds.last)
            e["epoch"] = .string(epoch)
            sink.answer(410, .object(JSONObject([("error", .object(e))])), headers: headers)
            return
        }
        let id = nextId
        nextId += 1
        if r.stream {
            sink.openStream(headers: headers)
            if sink.omitsBody {
                // HEAD: the stream's head, and no events.
                sink.close()
                return
            }
            streams[id] = Stream(cursor: r.since, sink: sink)
            sink.onClose = { [weak self] in self?.streams[id] = nil }
            pump(id)
            scheduleKeepalive()
            return
        }
        let changes: [(seq: Int64, text: String)]
        do { changes = try source.feedChanges(after: r.since, limit: r.limit) } catch {
            sink.answer(500, LocalAPIRoute.errorBody(code: "storage_failed", message: "could not read the change feed: \(error)"))
            return
        }
        if !changes.isEmpty || r.timeout == 0 || sink.omitsBody {
            sink.answer(200, Self.body(changes, since: r.since), headers: headers)
            return
        }
        var w = Waiter(since: r.since, limit: r.limit, sink: sink)
        w.timer = loop.schedule(after: .seconds(r.timeout)) { [weak self] in
            guard let self, let w = self.waiters.removeValue(forKey: id) else { return }
            w.sink.answer(200, Self.body([], since: w.since), headers: headers)
        }
        waiters[id] = w
        logger.debug("api.feed_parked", metadata: ["seq": "\(r.since)", "timeout_s": "\(r.timeout)"])
        sink.onClose = { [weak self] in
            guard let self, let w = self.waiters.removeValue(forKey: id) else { return }
            if let t = w.timer { _ = self.loop.cancel(t) }
        }
    }

    /// Something was committed: parked long-polls with changes are answered, streams get theirs.
    func wake() {
        guard !waiters.isEmpty || !streams.isEmpty else { return }
        let epoch = (try? source.feedEpoch()) ?? ""
        for (id, w) in waiters {
            guard let changes = try? source.feedChanges(after: w.since, limit: w.limit), !changes.isEmpty else { continue }
            waiters[id] = nil
            if let t = w.timer { _ = loop.cancel(t) }
            w.sink.answer(200, Self.body(changes, since: w.since), headers: [("OrderSync-Epoch", epoch)])
        }
        for id in Array(streams.keys) { pump(id) }
    }

    /// Ends every stream and answers every long-poll (the node stops).
    func stop() {
        for w in waiters.values {
            if let t = w.timer { _ = loop.cancel(t) }
            w.sink.answer(200, Self.body([], since: w.since))
        }
        waiters.removeAll()
        for s in streams.values { s.sink.close() }
        streams.removeAll()
        if let k = keepalive { _ = loop.cancel(k) }
        keepalive = nil
    }

    /// Writes what a stream has not seen yet, in batches.
    private func pump(_ id: Int) {
        while var s = streams[id] {
            guard s.sink.isOpen else {
                streams[id] = nil
                return
            }
            if s.sink.pendingBytes > Self.streamBacklogLimit {
                logger.notice("api.feed_reader_slow", metadata: ["seq": "\(s.cursor)"])
                streams[id] = nil
                s.sink.close()
                return
            }
            let changes: [(seq: Int64, text: String)]
            do { changes = try source.feedChanges(after: s.cursor, limit: ChangeFeed.maxLimit) } catch {
                logger.warning("api.feed_read_failed", metadata: ["error": "\(error)"])
                return
            }
            guard let last = changes.last else { return }
            s.sink.write(changes.map { ChangeFeed.sseEvent(seq: $0.seq, changeText: $0.text) }.joined())
            s.cursor = last.seq
            streams[id] = s
            if changes.count < ChangeFeed.maxLimit { return }
        }
    }

    private func scheduleKeepalive() {
        guard keepalive == nil else { return }
        keepalive = loop.schedule(after: Self.keepaliveInterval) { [weak self] in
            guard let self else { return }
            self.keepalive = nil
            for (id, s) in self.streams {
                if s.sink.isOpen { s.sink.write(ChangeFeed.sseKeepalive) } else { self.streams[id] = nil }
            }
            if !self.streams.isEmpty { self.scheduleKeepalive() }
        }
    }

    /// `{"changes":[...],"last":N}`: `last` is the last change's seq, or `since` when none.
    static func body(_ changes: [(seq: Int64, text: String)], since: Int64) -> [UInt8] {
        Array("{\"changes\":[\(changes.map(\.text).joined(separator: ","))],\"last\":\(changes.last?.seq ?? since)}".utf8)
    }
}
