/// One operation applied inside a group, until the group's commit reports how it went.
public struct GroupedOperation: Equatable, Sendable {
    /// Its journal sequence.
    public var seq: Int64
    /// The terminal that sent it; nil for the master's local API.
    public var sender: Int?
    public var origin: String
    public var opId: String?
    public var operation: OperationKind
    public var orderUUIDs: [String]
}

/// Group commit (Docs/ARCHITECTURE.md, "The master's hot path"): the node applies every
/// operation that arrived together inside one transaction and commits it once. The engine
/// answers as usual; the node holds those answers until the commit is on disk and, if the
/// commit fails, asks the engine to take the group back here.
extension MasterEngine {
    /// Starts noting the operations applied from now on (`groupApplied`).
    public func beginGroup() {
        recordsGroup = true
        groupApplied = []
    }

    /// The group is on disk: what was noted is forgotten.
    public func groupCommitted() {
        recordsGroup = false
        groupApplied = []
    }

    /// The group's commit failed and the store rolled it back: the sequence is read again and
    /// every operation of the group is refused with `storage_failed`, to its sender (with the
    /// `result` an OrderSync slave waits for) or, for the local API, in the log and the
    /// rejection log. The node closes the links after sending these (their slaves send their
    /// outboxes again when they reconnect; StorePOS terminals get the store as it is).
    public func groupFailed(_ reason: String, now: Int64) -> [Action] {
        let failed = groupApplied
        recordsGroup = false
        groupApplied = []
        lastSeq = (try? store.lastJournalSeq()) ?? lastSeq
        // Orders read for a snapshot inside the group may hold what was rolled back.
        snapshotRead = nil
        var out: [Action] = []
        for op in failed {
            let errors = op.orderUUIDs.map {
                WireError(.storageFailed, "the master could not store the change: \(reason)", uuid: $0)
            }
            guard let s = op.sender, let peer = peers[s] else {
                for e in errors {
                    out.append(
                        .log(
                            EngineLog(
                                e.logLevel, "message.rejected", [("origin", op.origin), ("code", e.code.rawValue), ("reason", e.message)])))
                    record(e, origin: op.origin, opId: op.opId, operation: op.operation, now: now, &out)
                }
                continue
            }
            for e in errors { reject(e, opId: op.opId, operation: op.operation, to: s, now: now, &out) }
            if peer.speaksOrderSync, let id = op.opId {
                out.append(
                    .send(
                        peer: s,
                        bytes: ServerMessage.result(opId: id, seq: nil, applied: 0, unchanged: 0, failed: errors.count).encodedBytes()))
            }
        }
        return out
    }
}
