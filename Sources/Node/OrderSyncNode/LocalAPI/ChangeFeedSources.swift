import OrderStore
import SyncCore

/// The master's feed: its journal, one change per entry, up to the last committed one (a
/// group being committed is not shown before it is on disk).
final class MasterFeedSource: ChangeFeedSource {
    private let store: StoreWriter
    private let epoch: String
    /// The last journal seq known to be on disk.
    var committed: Int64

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
        return try store.read { try $0.journal(since: seq, orderUUID: nil, limit: limit) }.filter { $0.seq <= committed }.map {
            ($0.seq, ChangeFeed.changeText(seq: $0.seq, ChangeFeed.masterChange($0)))
        }
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
