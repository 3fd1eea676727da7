import Foundation
import OrderStore
import SyncCore

/// What applying one operation message produced.
public struct ApplyOutcome: Sendable {
    /// The journal sequence number of the applied change, if anything was applied.
    public var seq: Int64?
    /// The broadcast text for every terminal (nil when nothing was applied).
    public var broadcast: String?
    /// The orders as applied (after the change; removed orders as they were).
    public var applied: [Order]
    /// Harmless repeats (nothing applied).
    public var unchanged: [Order]
    /// Rejected orders with the reason.
    public var errors: [WireError]
    /// True when `opId` had been applied before and this is the remembered answer.
    public var isRepeat: Bool
    /// For a repeat: the refusals recorded the first time (already in the rejection log).
    public var repeatedErrors: [WireError] = []
    /// The operation.
    public var operation: OperationKind
}

/// The master's write path: plans a message against the store, applies it and its journal entry
/// in one SQLite transaction, and hands back the broadcast. The one writer of the master's
/// database; used only from the event-loop thread.
final class MasterLedger {
    let db: OrderDatabase
    private(set) var lastSeq: Int64
    let epoch: String
    let store: String

    init(db: OrderDatabase, store: String, epoch: String) throws {
        self.db = db
        self.store = store
        self.epoch = epoch
        self.lastSeq = try db.lastJournalSeq()
    }

    /// Applies `message` from `origin`. Storage failures turn every planned change into a
    /// `storage_failed` error; nothing is half-applied.
    func apply(_ message: OperationMessage, origin: String) -> ApplyOutcome {
        var outcome = ApplyOutcome(seq: nil, broadcast: nil, applied: [], unchanged: [], errors: [], isRepeat: false,
                                   repeatedErrors: [], operation: message.operation)
        if let id = message.opId {
            do {
                if let entry = try db.journalEntry(opId: id) {
                    outcome.seq = entry.seq
                    outcome.broadcast = entry.message
                    outcome.isRepeat = true
                    if case .success(.applied(_, let orders, _, _, _, _)) = ServerMessage.decode(entry.message) {
                        outcome.applied = orders
                    }
                    // The orders refused the first time are refused again, with the same reasons.
                    outcome.repeatedErrors = try db.rejections(opId: id).map {
                        WireError($0.code, $0.message, uuid: $0.orderUUID)
                    }
                    return outcome
                }
            } catch {
                outcome.errors = [WireError(.storageFailed, "could not read the journal: \(error)")]
                return outcome
            }
        }
        let plan: OperationPlan
        do {
            plan = try OperationPlanner.plan(message, now: MasterLedger.now(), lookup: { try db.order(uuid: $0) },
                                             wasRemoved: { try db.hasTombstone(uuid: $0) })
        } catch {
            outcome.errors = [WireError(.storageFailed, "could not read orders: \(error)")]
            return outcome
        }
        outcome.unchanged = plan.unchanged
        outcome.errors = plan.errors
        guard !plan.changes.isEmpty else { return outcome }
        let seq = lastSeq + 1
        let orders = plan.changes.map(\.order)
        let text = ServerMessage.applied(operation: message.operation, orders: orders, seq: seq, opId: message.opId,
                                         origin: origin, snapshot: nil).encoded()
        let entry = JournalEntry(seq: seq, opId: message.opId, origin: origin, operation: message.operation,
                                 orderUUIDs: orders.map(\.uuid), message: text, recordedAtMillis: MasterLedger.now().epochMillis)
        do {
            try db.transaction {
                for change in plan.changes {
                    switch change {
                    case .insert(let o): try db.insertOrder(o)
                    case .update(let o): try db.updateOrder(o)
                    case .delete(let o):
                        try db.deleteOrder(uuid: o.uuid)
                        try db.addTombstone(uuid: o.uuid, seq: seq)
                    }
                }
                try db.appendJournal(entry)
            }
        } catch {
            // The transaction rolled back; re-read the sequence in case the commit did reach the
            // disk although reported as failed.
            lastSeq = (try? db.lastJournalSeq()) ?? lastSeq
            for o in orders {
                outcome.errors.append(WireError(.storageFailed, "the master could not store the change: \(error)", uuid: o.uuid))
            }
            return outcome
        }
        lastSeq = seq
        outcome.seq = seq
        outcome.broadcast = text
        outcome.applied = orders
        return outcome
    }

    /// The snapshot messages for a terminal that just connected, plus the sequence they cover.
    func snapshotMessages(chunk: Int = NodeDefaults.snapshotChunk) throws -> (messages: [String], count: Int, seq: Int64) {
        let orders = try db.allOrders()
        let parts = max(1, (orders.count + chunk - 1) / chunk)
        var out: [String] = []
        for p in 0..<parts {
            let slice = Array(orders[min(orders.count, p * chunk)..<min(orders.count, (p + 1) * chunk)])
            out.append(ServerMessage.applied(operation: .create, orders: slice, seq: nil, opId: nil, origin: nil,
                                             snapshot: SnapshotPart(seq: lastSeq, part: p + 1, parts: parts, epoch: epoch)).encoded())
        }
        return (out, orders.count, lastSeq)
    }

    /// Most journal entries sent to catch a terminal up; further behind, a snapshot is cheaper.
    static let maxCatchUpEntries = 10_000

    /// The broadcasts a terminal that applied everything up to `lastSeq` of `epoch` has missed,
    /// in order; nil when the journal cannot bring it up to date (another epoch, a sequence
    /// from the future, entries compacted away, or too far behind): it needs a snapshot.
    func catchUp(from lastSeq: Int64, epoch peerEpoch: String?) throws -> [String]? {
        guard let e = peerEpoch, e == epoch, lastSeq >= 0, lastSeq <= self.lastSeq else { return nil }
        if lastSeq == self.lastSeq { return [] }
        guard self.lastSeq - lastSeq <= Int64(MasterLedger.maxCatchUpEntries),
              let first = try db.firstJournalSeq(), first <= lastSeq + 1 else { return nil }
        let entries = try db.journal(since: lastSeq, orderUUID: nil, limit: MasterLedger.maxCatchUpEntries)
        // Gapless by construction (sequence numbers are assigned in the commit's transaction).
        guard entries.first?.seq == lastSeq + 1, entries.last?.seq == self.lastSeq else { return nil }
        return entries.map(\.message)
    }

    /// Terminals not heard from for this long are forgotten (they get a snapshot if they come
    /// back), so one lost terminal does not keep tombstones for ever.
    static let terminalHorizonMillis: Int64 = 30 * 24 * 3600 * 1000

    /// Drops the tombstones every known terminal has passed. A terminal that has not passed
    /// one cannot bring the order back anyway (the master refuses such a Create); the rule only
    /// keeps tombstones while a slave may still replay an old Create from its outbox.
    @discardableResult
    func compactTombstones() throws -> Int {
        try db.forgetTerminals(lastSeenBefore: MasterLedger.now().epochMillis - MasterLedger.terminalHorizonMillis)
        let passed = try db.knownTerminals().map(\.ackedSeq).min() ?? lastSeq
        return try db.compactTombstones(through: min(passed, lastSeq))
    }

    /// Wall-clock now, in UTC, for defaults of `created` and for the journal's timestamps.
    static func now() -> OrderTimestamp {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return OrderTimestamp(epochMillis: Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000)
    }
}
