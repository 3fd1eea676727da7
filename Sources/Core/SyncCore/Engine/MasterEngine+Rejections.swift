/// Refusals: what a terminal or the local API is told, what the master logs, and the record an
/// operator lists with `ordersync journal --rejected`.
extension MasterEngine {
    func reject(_ e: WireError, opId: String?, operation: OperationKind?, to id: Int, now: Int64, _ out: inout [Action]) {
        peers[id]?.rejected += 1
        let address = peers[id]?.address ?? "?"
        record(e, origin: peers[id]?.origin ?? address, opId: opId, operation: operation, now: now, &out)
        var meta: [(String, String)] = [("peer.address", address), ("code", e.code.rawValue), ("reason", e.message)]
        if let u = e.uuid { meta.append(("order.uuid", u)) }
        if let op = opId { meta.append(("op.id", op)) }
        // One source's flood of refusals costs a few lines a minute (`refusals.summary`).
        let source = peers[id].map { bucketKey(for: $0) } ?? address
        logRefusal(EngineLog(e.logLevel, "message.rejected", meta), source: source, reason: e.message, now: now, &out)
        out.append(.send(peer: id, bytes: ServerMessage.error(e, opId: opId, operation: operation).encodedBytes()))
    }

    /// Keeps a rejection where an operator can list it (`ordersync journal --rejected`).
    func record(_ e: WireError, origin: String, opId: String?, operation: OperationKind?, now: Int64, _ out: inout [Action]) {
        refusals[e.code, default: 0] += 1
        do {
            try store.appendRejection(
                Rejection(
                    recordedAtMillis: now, origin: origin, opId: opId, operation: operation,
                    orderUUID: e.uuid, code: e.code, message: e.message))
        } catch {
            out.append(.log(EngineLog(.error, "rejection.record_failed", [("error", "\(error)")])))
        }
    }
}
