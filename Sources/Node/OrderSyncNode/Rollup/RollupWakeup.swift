import Foundation
import JSON

/// What wakes a roll-up that shipped everything stable: the node's change feed (a long-poll on
/// `DATADIR/ordersync.sock`, Docs/API.md "Change feed"), or, with no node running or while it
/// waits for the stable seq to move (a metadata write the feed does not show), inotify on the
/// store's files. Never a fixed poll: each wait ends at a change or after `idleSeconds`.
final class RollupWakeup {
    private let dataDirectory: String
    private let idleSeconds: Int
    /// The feed's cursor: the last change seen (the feed's own numbering on a slave).
    private var cursor: Int64?
    private var inotify: Int32 = -1

    /// A waker for `dataDirectory`; each wait lasts at most `idleSeconds`.
    init(dataDirectory: String, idleSeconds: Int = 25) {
        self.dataDirectory = dataDirectory
        self.idleSeconds = idleSeconds
    }

    deinit { if inotify >= 0 { close(inotify) } }

    /// Takes the feed's current position and starts watching the files: call before looking at
    /// the journal, so that a change made after that look ends the next wait at once.
    func arm() {
        if cursor == nil { cursor = try? feedPosition() }
        if inotify < 0 { inotify = Self.watch(dataDirectory) }
    }

    /// Waits for a change: from the feed when `feed` (and a node answers), else from the files.
    func wait(feed: Bool) {
        if feed, let c = cursor, let next = try? longPoll(since: c) {
            cursor = next
            return
        }
        waitForFiles()
    }

    /// The feed's last seq: a cursor beyond it is answered `410` with `last`.
    private func feedPosition() throws -> Int64? {
        let r = try LocalAPIClient(dataDirectory: dataDirectory, timeout: .seconds(5)).send(
            method: "GET", path: "/v1/changes?since=\(Int64.max / 2)&limit=1")
        return r.body.objectValue?["error"]?.objectValue?["last"]?.intValue ?? r.body.objectValue?["last"]?.intValue
    }

    /// One long-poll from `since`: the new cursor once a change came (or the wait ran out).
    private func longPoll(since: Int64) throws -> Int64 {
        let client = LocalAPIClient(dataDirectory: dataDirectory, timeout: .seconds(Int64(idleSeconds) + 15))
        let r = try client.send(method: "GET", path: "/v1/changes?since=\(since)&limit=1000&timeout=\(idleSeconds)")
        let o = r.body.objectValue
        if r.status == 410, let last = o?["error"]?.objectValue?["last"]?.intValue { return last }
        guard r.status == 200, let last = o?["last"]?.intValue else { throw LocalAPIClientError.answer(r) }
        return last
    }

    /// Waits until the store's files (`ordersync.sqlite*`) change or `idleSeconds` pass; drains
    /// what inotify reported.
    private func waitForFiles() {
        guard inotify >= 0 else {
            Thread.sleep(forTimeInterval: Double(idleSeconds))
            return
        }
        let deadline = Date().addingTimeInterval(Double(idleSeconds))
        while true {
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { return }
            var p = pollfd(fd: inotify, events: Int16(POLLIN), revents: 0)
            let n = poll(&p, 1, Int32(left * 1000))
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return }
            if drainTouchesStore() { return }
        }
    }

    /// Reads the pending inotify events; true when one names a store file (not the roll-up's
    /// own state file in the same directory).
    private func drainTouchesStore() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 8192)
        var touched = false
        while true {
            let n = buffer.withUnsafeMutableBytes { read(inotify, $0.baseAddress, $0.count) }
            if n <= 0 { return touched }
            // struct inotify_event { int wd; uint32_t mask; uint32_t cookie; uint32_t len; char name[]; }
            var i = 0
            while i + 16 <= n {
                let len = Int(buffer[i + 12]) | Int(buffer[i + 13]) << 8 | Int(buffer[i + 14]) << 16 | Int(buffer[i + 15]) << 24
                let nameBytes = buffer[(i + 16)..<min(i + 16 + len, n)].prefix { $0 != 0 }
                if String(decoding: nameBytes, as: UTF8.self).hasPrefix(NodeDefaults.databaseFile) { touched = true }
                i += 16 + len
            }
        }
    }

    /// An inotify descriptor (non-blocking) watching `directory` for writes, or -1.
    private static func watch(_ directory: String) -> Int32 {
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { return -1 }
        let mask = UInt32(IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE)
        guard inotify_add_watch(fd, directory, mask) >= 0 else {
            close(fd)
            return -1
        }
        return fd
    }
}
