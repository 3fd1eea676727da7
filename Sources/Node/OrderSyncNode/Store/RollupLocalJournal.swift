import Foundation
import OrderStore
import RollupCore
import SyncCore

/// The roll-up's view of a data directory's store (beside `OfflineStore`: another process
/// reading a store the node writes): opened read-only (SQLITE_OPEN_READONLY,
/// never a write lock), each question one short read, nothing held between them (WAL: "readers
/// do not block writers and a writer does not block readers").
final class RollupLocalJournal {
    /// Which history the store's journal belongs to.
    struct Identity: Equatable {
        var storeId: String
        var lineage: String
        /// "master" or "slave".
        var role: String
    }

    /// Where the local journal stands.
    struct Extent: Equatable {
        /// The lowest seq it holds, nil when it holds none.
        var oldest: Int64?
        /// The highest seq it holds (or its floor: a standby's snapshot base, the replica's seq
        /// on a standby whose journal is empty, a compacted journal).
        var newest: Int64
        /// The store's stable seq: what no promotion can undo.
        var stable: Int64
    }

    private let db: OrderDatabase
    let identity: Identity

    /// Opens the store of `dataDirectory` read-only; throws `RollupFailure.configuration` when
    /// it is not a store whose journal can be rolled up (no store yet, a slave that never
    /// joined one).
    init(dataDirectory: String) throws(RollupFailure) {
        let path = (dataDirectory as NSString).appendingPathComponent(NodeDefaults.databaseFile)
        do {
            db = try OrderDatabase.openReadOnly(path: path)
        } catch {
            throw .configuration("\(dataDirectory) is not a store that can be rolled up: \(error)")
        }
        do {
            identity = try Self.identity(db)
        } catch let f as RollupFailure {
            db.close()
            throw f
        } catch {
            db.close()
            throw .configuration("cannot read the store's identity in \(dataDirectory): \(error)")
        }
    }

    deinit { db.close() }

    private static func identity(_ db: OrderDatabase) throws -> Identity {
        let role = try db.metadata("node.role") ?? "master"
        if role == "slave" {
            guard let store = try db.metadata("replica.store"), let epoch = try db.metadata("replica.epoch") else {
                throw RollupFailure.configuration("this slave has not joined a store yet: it holds no copy of a journal")
            }
            return Identity(storeId: store, lineage: epoch, role: role)
        }
        guard let store = try db.metadata("store.id") else {
            throw RollupFailure.configuration("the store has no id yet: start its master once first")
        }
        return Identity(storeId: store, lineage: try db.lineage(), role: role)
    }

    /// The journal's extent and the stable seq (`sync.stable_seq`, Docs/PROTOCOL.md 7.18): on a
    /// master with no voting terminal, every committed entry is stable. A standby's copy ends at
    /// its replica's seq when that is past its journal (`standbyPosition`): after a snapshot the
    /// journal is empty and the replica stands at the snapshot's base, so the entries up to the
    /// base are not here (a gap when head office's checkpoint is below it, never "caught up").
    /// Every broadcast after the base is journalled in the transaction that moves the replica,
    /// so past the base the two agree.
    func extent() throws -> Extent {
        let newest = identity.role == "slave" ? try db.standbyPosition().lastSeq : try db.lastJournalSeq()
        let oldest = try db.firstJournalSeq()
        var stable = Int64(try db.metadata(StableSeq.metadataKey) ?? "") ?? 0
        if identity.role != "slave", try !db.memberTerminals().contains(where: { $0.voter && $0.revokedMillis == nil }) {
            stable = newest
        }
        return Extent(oldest: oldest, newest: newest, stable: min(stable, newest))
    }

    /// Up to `limit` entries with seq in `after+1 ... through`, oldest first.
    func entries(after: Int64, through: Int64, limit: Int) throws -> [RollupEntry] {
        try db.journal(since: after, orderUUID: nil, limit: limit).filter { $0.seq <= through }.map(Self.rollupEntry)
    }

    /// When the entry at `seq` was applied, if the journal holds it.
    func recordedMillis(seq: Int64) throws -> Int64? {
        try db.journalEntry(seq: seq)?.recordedAtMillis
    }

    /// The entry as head office keeps it: a standby's copy of a broadcast the master marked
    /// `ackNow` (Docs/PROTOCOL.md 7.8) ends with that member, which the master's journal never
    /// holds; it is taken off, so every copy ships the master's bytes.
    static func rollupEntry(_ e: JournalEntry) -> RollupEntry {
        var message = e.message
        if AckNow.isMarked(message) { message = Array(message.dropLast(ackNowSuffixCount)) + [UInt8(ascii: "}")] }
        return RollupEntry(
            seq: e.seq, term: e.term, opId: e.opId, origin: e.origin, operation: e.operation.rawValue, message: message,
            recordedAtMillis: e.recordedAtMillis)
    }

    /// The length of `,"ackNow":true}`.
    private static let ackNowSuffixCount = #","ackNow":true}"#.utf8.count
}
