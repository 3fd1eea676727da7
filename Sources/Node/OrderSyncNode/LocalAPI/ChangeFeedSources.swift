import OrderStore
import SyncCore

/// The master's feed: its journal, one change per entry, up to the last committed one (a
/// group being committed is not shown before it is on disk).
///
/// Each entry's change is rendered once (its broadcast parsed, its orders written as the feed
/// shows them) and kept for the newest `renderedKept` sequences: every reader after the first,
/// and every stream the commit wakes, reads the kept text instead of parsing the journal again.
final class MasterFeedSource: ChangeFeedSource {
    private let store: StoreWriter
    private let epoch: String
    /// The last journal seq known to be on disk.
    var committed: Int64
    /// The rendered change of recent journal entries, by seq (an entry never changes once
    /// journalled; the rows read from the journal still say which entries exist).
    private var rendered: [Int64: String] = [:]
    /// How many rendered changes are kept: two of the largest answers.
    static let renderedKept = 2 * ChangeFeed.maxLimit

    init(store: StoreWriter, epoch: String) throws {
        self.store = store
        self.epoch = epoch
        committed = try store.read { try $0.lastJournalSeq() }
    }

    func feedEpoch() throws -> String { epoch }

    func feedBounds() throws -> (oldest: Int64, last: Int64) {
        // After compaction the journal holds only first...last: a cursor below first - 1 missed some.
        let first = try store.read { try $0.firstJournalSeq() }
        return ((first ?? committed + 1) - 1, committed)
    }

    func feedChanges(after seq: Int64, limit: Int) throws -> [(seq: Int64, text: String)] {
        guard seq < committed else { return [] }
        let changes = try store.read { try $0.journal(since: seq, orderUUID: nil, limit: limit) }.filter { $0.seq <= committed }.map {
            entry -> (seq: Int64, text: String) in
            if let text = rendered[entry.seq] { return (entry.seq, text) }
            let text = ChangeFeed.changeText(seq: entry.seq, ChangeFeed.masterChange(entry))
            rendered[entry.seq] = text
            renderCount += 1
            return (entry.seq, text)
        }
        forgetRendered()
        return changes
    }

    /// Number of changes rendered so far (parses of journal entries), for tests.
    private(set) var renderCount = 0

    /// Keeps the newest `renderedKept` rendered changes.
    private func forgetRendered() {
        guard rendered.count > Self.renderedKept else { return }
        let keep = committed - Int64(Self.renderedKept)
        rendered = rendered.filter { $0.key > keep }
    }
}

/// A slave's feed: its `feed` table, numbered by the replica itself.
final class SlaveFeedSource: ChangeFeedSource {
    private let store: StoreWriter
    private let epoch: String

    init(store: StoreWriter) throws {
        self.store = store
        epoch = try store.read { try $0.databaseEpoch() }
    }

    func feedEpoch() throws -> String { epoch }
    func feedBounds() throws -> (oldest: Int64, last: Int64) { try store.read { try $0.feedBounds() } }
    func feedChanges(after seq: Int64, limit: Int) throws -> [(seq: Int64, text: String)] {
        try store.read { try $0.feed(after: seq, limit: limit) }
    }
}
