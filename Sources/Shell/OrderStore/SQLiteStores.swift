import Foundation
import SyncCore

/// The master engine's store on SQLite: every change and its journal entry in one
/// `synchronous=FULL` transaction.
public final class SQLiteMasterStore: MasterStore {
    /// The database it reads and writes.
    public let db: OrderDatabase

    /// The store on `db` (the node's read-write database, or an in-memory one in tests).
    public init(db: OrderDatabase) {
        self.db = db
    }

    public func order(uuid: String) throws -> Order? { try db.order(uuid: uuid) }
    public func hasTombstone(uuid: String) throws -> Bool { try db.hasTombstone(uuid: uuid) }
    public func allOrders() throws -> [Order] { try db.allOrders() }
    public func lastJournalSeq() throws -> Int64 { try db.lastJournalSeq() }
    public func firstJournalSeq() throws -> Int64? { try db.firstJournalSeq() }
    public func journal(since seq: Int64, limit: Int) throws -> [JournalEntry] { try db.journal(since: seq, orderUUID: nil, limit: limit) }
    public func journalEntry(opId: String) throws -> JournalEntry? { try db.journalEntry(opId: opId) }
    public func appliedOpIdSeq(opId: String) throws -> Int64? { try db.appliedOpIdSeq(opId: opId) }
    public func appliedOpIds(through seq: Int64, limit: Int) throws -> [String: Int64] {
        try db.appliedOpIds(through: seq, limit: limit)
    }
    public func removedOrderUUIDs() throws -> [String] { try db.removedOrderUUIDs() }
    public func rejections(opId: String) throws -> [Rejection] { try db.rejections(opId: opId) }

    public func commit(_ changes: [OrderChange], entry: JournalEntry) throws {
        // In a group: no savepoint per operation; a failure here fails the group (`groupWrite`).
        try db.groupWrite {
            for change in changes {
                switch change {
                case .insert(let o): try db.insertOrder(o)
                case .update(let o): try db.updateOrder(o)
                case .delete(let o):
                    try db.deleteOrder(uuid: o.uuid)
                    try db.addTombstone(uuid: o.uuid, seq: entry.seq)
                }
            }
            // Inside this transaction: no savepoint of its own.
            try db.insertJournalRows(entry)
        }
    }

    public func appendRejection(_ rejection: Rejection) throws { _ = try db.appendRejection(rejection) }
    public func noteForeignOrder(_ sighting: ForeignOrder) throws -> Bool { try db.noteForeignOrder(sighting) }
    public func clearedForeignUUIDs() throws -> [String] { try db.foreignOrders(state: .cleared).map(\.uuid) }
    public func foreignOrders() throws -> [ForeignOrder] { try db.foreignOrders() }
    public func setForeignOrders(_ uuids: [String], state: ForeignOrder.State) throws { try db.setForeignOrders(uuids, state: state) }

    public func saveTerminals(_ terminals: [KnownTerminal]) throws {
        try db.transaction { for t in terminals { try db.saveTerminal(t) } }
    }

    public func knownTerminals() throws -> [KnownTerminal] { try db.knownTerminals() }
    public func forgetTerminals(lastSeenBefore millis: Int64) throws -> Int { try db.forgetTerminals(lastSeenBefore: millis) }
    public func compactTombstones(through seq: Int64) throws -> Int { try db.compactTombstones(through: seq) }
    public func compactJournal(through seq: Int64, recordedBefore millis: Int64) throws -> Int {
        try db.compactJournal(through: seq, recordedBefore: millis)
    }
    public func masterTerms() throws -> MasterTerms { MasterTerms(term: try db.term(), starts: try db.termStarts()) }
}

/// The slave engine's store on SQLite: the replica, its position, the outbox and the sync
/// errors, each `SlaveCommit` in one `synchronous=FULL` transaction.
public final class SQLiteSlaveStore: SlaveStore {
    /// The database it reads and writes.
    public let db: OrderDatabase

    /// The store on `db` (the node's read-write database, or an in-memory one in tests).
    public init(db: OrderDatabase) {
        self.db = db
    }

    public func order(uuid: String) throws -> Order? { try db.order(uuid: uuid) }
    public func outboxEntries() throws -> [OutboxEntry] { try db.outboxEntries() }

    public func loadReplicaState() throws -> ReplicaState {
        try ReplicaState(
            lastSeq: Int64(try db.metadata("replica.last_seq") ?? "0") ?? 0, epoch: try db.metadata("replica.epoch"),
            store: try db.metadata("replica.store"), outbox: try db.outboxEntries(), syncErrors: try db.syncErrors(),
            needsSnapshot: try db.metadata("replica.needs_snapshot") == "1"
        ).withTerms(of: db)
    }

    public func standbyJournal(after seq: Int64) throws -> [JournalEntry] { try db.journal(since: seq, orderUUID: nil, limit: Int.max) }

    public func answeredOperation(opId: String) throws -> AnsweredOperation? { try db.answeredOperation(opId: opId) }

    public func commit(_ c: SlaveCommit) throws {
        try db.transaction {
            try db.applyStandbyBefore(c)
            if let all = c.replaceAll { try db.replaceAllOrders(with: all) }
            if c.replaceAllWithStaged { try db.switchToStagedSnapshot(changes: c.changes) }
            for change in c.changes where !c.replaceAllWithStaged {
                switch change {
                case .insert(let o), .update(let o):
                    try db.upsertOrder(o)
                case .delete(let o):
                    if try db.order(uuid: o.uuid) != nil { try db.deleteOrder(uuid: o.uuid) }
                }
            }
            if let s = c.lastSeq { try db.setMetadata("replica.last_seq", String(s)) }
            if let e = c.epoch { try db.setMetadata("replica.epoch", e) }
            if let s = c.store { try db.setMetadata("replica.store", s) }
            try db.prependOutbox(c.prependOutbox)
            for e in c.appendOutbox { try db.appendOutbox(e) }
            for id in c.deleteOutbox { try db.deleteOutbox(opId: id) }
            for (key, error) in c.syncErrors.sorted(by: { $0.key < $1.key }) { try db.setSyncError(orderKey: key, error) }
            for r in c.rejections { _ = try db.appendRejection(r) }
            if let n = c.needsSnapshot { try db.setMetadata("replica.needs_snapshot", n ? "1" : "0") }
            for a in c.answered { try db.recordAnswered(a, keep: SlaveCommit.answeredKept) }
            if !c.feed.isEmpty { try db.appendFeed(c.feed, atMillis: Int64(Date().timeIntervalSince1970 * 1000)) }
            try db.applyStandbyAfter(c)
        }
        // Armed only once the rest of the commit stands (a failure above rolled it back).
        if c.replaceAllWithStaged, db.isInGroup { db.switchAtGroupCommit() }
    }
}

extension SQLiteSlaveStore: SnapshotStagingStore {
    public func stageSnapshot(_ orders: [Order], first: Bool) throws { try db.stageSnapshotOrders(orders, first: first) }
    public func stagedOrder(uuid: String) throws -> Order? { try db.stagedOrder(uuid: uuid) }
}
