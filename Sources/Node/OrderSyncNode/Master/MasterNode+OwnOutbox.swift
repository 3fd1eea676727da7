import Foundation
import Logging
import NodePolicy
import OrderStore
import SyncCore

/// A promoted node's own outbox (Docs/PROTOCOL.md, "A promoted node's own outbox"): the
/// operations its local API acknowledged while it was a slave (`202`, applied to its orders and
/// kept in its outbox) become, once it is master proper, the master's own writes: applied in
/// outbox order with their operation ids through the normal group commit (a repeat answered
/// from the journal is not applied again, a refusal is recorded), each answer kept for a retry
/// of its id, and the outbox emptied in the same transaction.
extension MasterNode {
    /// Queues the outbox for the next group (on becoming master proper, before anything else).
    func enqueueOwnOutbox() {
        let entries: [OutboxEntry]
        do {
            entries = try writer.read { try $0.outboxEntries() }
        } catch {
            logger.error("promote.outbox_unread", metadata: ["error": "\(error)"])
            return
        }
        guard !entries.isEmpty else { return }
        logger.notice("promote.outbox", metadata: ["operations": "\(entries.count)"])
        enqueue(.ownOutbox(entries))
    }

    /// Applies the outbox `entries` in the open group; returns the engine's actions (the
    /// broadcasts), held until the commit. An entry the store could not take stays in the
    /// outbox (nothing of it is lost; the group fails with it).
    func applyOwnOutbox(_ entries: [OutboxEntry], now: Int64) -> [MasterEngine.Action] {
        guard writer.phase == .collecting else {
            // The store took no group: the outbox stays as it is, on disk.
            logger.error("promote.outbox_not_applied", metadata: ["reason": "the store took no transaction"])
            return []
        }
        let unknown: Set<String>
        do {
            unknown = try writer.collect { try $0.restoreOwnOutboxBase(entries) }
        } catch {
            logger.error("promote.outbox_not_applied", metadata: ["error": "\(error)"])
            return []
        }
        let origin = "\(terminalName) (local API)"
        var actions: [MasterEngine.Action] = []
        var applied = 0
        for entry in entries {
            guard case .success(.operation(let message)) = ClientMessage.decode(entry.message) else {
                logger.error("promote.outbox_unreadable", metadata: ["op.id": "\(entry.opId)"])
                continue
            }
            let keys = entry.orderKeys.map { $0.lowercased() }
            let (outcome, out) = engine.ownOutboxWrite(
                message, keys: keys, asStored: keys.contains(where: unknown.contains), origin: origin, now: now)
            actions += out
            if outcome.errors.contains(where: { $0.code == .storageFailed }) { continue }
            let answer = LocalAPIRoute.writeAnswer(
                single: nil, operation: message.operation, applied: outcome.applied, unchanged: outcome.unchanged,
                errors: outcome.errors + outcome.repeatedErrors, seq: outcome.seq)
            do {
                try writer.collect { db in
                    try db.saveAPIAnswer(opId: entry.opId, status: answer.status, body: answer.body.serializedBytes(), atMillis: now)
                    try db.deleteOutbox(opId: entry.opId)
                }
                applied += 1
            } catch {
                logger.error("promote.outbox_kept", metadata: ["op.id": "\(entry.opId)", "error": "\(error)"])
            }
        }
        logger.info(
            "promote.outbox_applied",
            metadata: ["operations": "\(applied)", "as_stored": "\(unknown.count)", "seq": "\(engine.lastSeq)"])
        return actions
    }
}
