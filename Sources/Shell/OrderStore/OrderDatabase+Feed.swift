import JSON
import SyncCore

/// A slave's change feed (migration 9): one row per change, numbered by SQLite in the same
/// transaction as the change, pruned to the newest `ChangeFeed.slaveFeedKept` rows.
extension OrderDatabase {
    /// Records `events`, recorded at `millis`, and drops the oldest rows beyond the bound.
    public func appendFeed(_ events: [SlaveFeedEvent], atMillis millis: Int64) throws {
        try requireWritable()
        try transaction {
            for e in events {
                try connection.execute(
                    "INSERT INTO feed (change_json, recorded_ms) VALUES (?, ?)",
                    [.text(JSONValue.object(e.json(at: millis)).serialized()), .integer(millis)])
            }
            try connection.execute(
                "DELETE FROM feed WHERE seq <= (SELECT max(seq) FROM feed) - ?", [.integer(ChangeFeed.slaveFeedKept)])
        }
    }

    /// The lowest cursor still answerable (one less than the oldest row kept) and the last
    /// sequence given out; both 0 before the first change. `sqlite_sequence` keeps the last
    /// number even when every row was pruned.
    public func feedBounds() throws -> (oldest: Int64, last: Int64) {
        let last = try connection.scalarInt("SELECT seq FROM sqlite_sequence WHERE name = 'feed'") ?? 0
        let first = try connection.scalarInt("SELECT min(seq) FROM feed")
        return (first.map { $0 - 1 } ?? last, last)
    }

    /// Up to `limit` changes after `seq`, oldest first, each as `{"seq":N,...}` text.
    public func feed(after seq: Int64, limit: Int) throws -> [(seq: Int64, text: String)] {
        try connection.withStatement(
            "SELECT seq, change_json FROM feed WHERE seq > ? ORDER BY seq LIMIT ?", [.integer(seq), .integer(Int64(limit))]
        ) { statement in
            var rows: [(seq: Int64, text: String)] = []
            while try statement.step() {
                let s = statement.int64(0)
                rows.append((s, ChangeFeed.changeText(seq: s, storedBody: statement.text(1))))
            }
            return rows
        }
    }
}
