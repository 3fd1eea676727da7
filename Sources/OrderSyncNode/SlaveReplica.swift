import Foundation
import OrderStore
import SyncCore

/// A slave's copy of the store: applies snapshots and broadcasts from the master, in order, and
/// remembers the last sequence applied in the same transaction.
final class SlaveReplica {
    let db: OrderDatabase
    private(set) var lastSeq: Int64
    private(set) var epoch: String?
    private var snapshotParts: [Int: [Order]] = [:]
    private var snapshotInfo: SnapshotPart?

    init(db: OrderDatabase) throws {
        self.db = db
        self.lastSeq = Int64(try db.metadata("replica.last_seq") ?? "0") ?? 0
        self.epoch = try db.metadata("replica.epoch")
    }

    /// The store this replica belongs to, once it has joined one.
    var joinedStore: String? { (try? db.metadata("replica.store")) ?? nil }

    /// Result of feeding one `applied` message.
    enum Step: Equatable {
        /// A snapshot part was kept; more parts follow.
        case snapshotPartKept
        /// The whole snapshot replaced the replica.
        case snapshotApplied(count: Int)
        /// A live operation was applied.
        case applied
        /// Already applied (sequence at or below the last one): ignored.
        case duplicate
        /// A sequence was skipped: the replica must be brought up to date again.
        case gap(expected: Int64, got: Int64)
    }

    /// Forgets a snapshot in progress (the link dropped).
    func resetSnapshot() {
        snapshotParts = [:]
        snapshotInfo = nil
    }

    /// Applies an `applied` message from the master.
    func apply(operation: OperationKind, orders: [Order], seq: Int64?, snapshot: SnapshotPart?, store: String?) throws -> Step {
        if let snap = snapshot {
            if snapshotInfo == nil || snapshotInfo?.seq != snap.seq || snap.part == 1 {
                snapshotParts = [:]
                snapshotInfo = snap
            }
            snapshotParts[snap.part] = orders
            guard snapshotParts.count >= snap.parts else { return .snapshotPartKept }
            let all = (1...snap.parts).flatMap { snapshotParts[$0] ?? [] }
            try db.transaction {
                try db.replaceAllOrders(with: all)
                try db.setMetadata("replica.last_seq", String(snap.seq))
                if let e = snap.epoch { try db.setMetadata("replica.epoch", e) }
                if let s = store { try db.setMetadata("replica.store", s) }
            }
            lastSeq = snap.seq
            epoch = snap.epoch
            resetSnapshot()
            return .snapshotApplied(count: all.count)
        }
        guard let seq = seq else {
            // A master that numbers nothing: apply as it comes.
            try applyChanges(operation, orders, seq: nil)
            return .applied
        }
        if seq <= lastSeq { return .duplicate }
        if seq != lastSeq + 1 { return .gap(expected: lastSeq + 1, got: seq) }
        try applyChanges(operation, orders, seq: seq)
        return .applied
    }

    private func applyChanges(_ operation: OperationKind, _ orders: [Order], seq: Int64?) throws {
        try db.transaction {
            for o in orders {
                switch operation {
                case .create, .update:
                    if try db.order(uuid: o.uuid) != nil { try db.updateOrder(o) } else { try db.insertOrder(o) }
                case .remove:
                    if try db.order(uuid: o.uuid) != nil { try db.deleteOrder(uuid: o.uuid) }
                }
            }
            if let s = seq { try db.setMetadata("replica.last_seq", String(s)) }
        }
        if let s = seq { lastSeq = s }
    }
}
