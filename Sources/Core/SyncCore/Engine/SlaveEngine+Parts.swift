/// A broadcast the master sent in parts (`Docs/PROTOCOL.md` 4.1.1): collected on the slave
/// and applied as one operation at its last part.
extension SlaveEngine {
    /// One part of a broadcast sent in several (`header` says which broadcast it belongs to):
    /// collected until the last, then applied as one operation, in one transaction. Parts come
    /// in order, consecutive, of one sequence, within `maxBroadcastPartsBytes`; anything else
    /// drops what was collected and reconnects (the catch-up sends the operation again).
    func broadcastPart(
        _ part: BroadcastPart, _ header: PartialBroadcast, _ orders: [Order], bytes: Int, _ out: inout [Action]
    ) {
        var c: PartialBroadcast
        if let current = collecting {
            guard current.isSame(as: header), part.part == current.received + 1 else {
                partsBroken(
                    "part \(part.part) of \(part.parts) (seq \(header.seq)) after part \(current.received) of \(current.parts) (seq \(current.seq))",
                    &out)
                return
            }
            c = current
        } else {
            guard part.part == 1 else {
                partsBroken("part \(part.part) of \(part.parts) (seq \(header.seq)) without the parts before it", &out)
                return
            }
            c = header
        }
        c.orders += orders
        c.received = part.part
        c.bytes += bytes
        guard c.bytes <= maxBroadcastPartsBytes else {
            partsBroken("the parts of seq \(c.seq) add up to more than \(maxBroadcastPartsBytes) bytes", &out)
            return
        }
        guard c.received == c.parts else {
            collecting = c
            return
        }
        collecting = nil
        // The standby journal keeps the whole broadcast, encoded again from its parts.
        receivedWhole = nil
        applied(c.operation, c.orders, seq: c.seq, opId: c.opId, origin: c.origin, &out)
    }

    /// The parts of a broadcast did not come as they must: what was collected is dropped and
    /// the link starts again.
    func partsBroken(_ reason: String, _ out: inout [Action]) {
        collecting = nil
        out.append(.log(EngineLog(.warning, "sync.parts_invalid", [("reason", reason), ("action", "resync")])))
        out.append(.resync(reason: "resync"))
    }
}

/// A broadcast being received in parts: which operation, and what its parts brought so far.
struct PartialBroadcast {
    var operation: OperationKind
    var seq: Int64
    var opId: String?
    var origin: String?
    var parts: Int
    /// The orders of the parts received, in order.
    var orders: [Order] = []
    /// The parts received (they come in order: the last one's number).
    var received = 0
    /// The encoded bytes of the parts received.
    var bytes = 0

    /// Whether `other` describes the same broadcast (every part repeats these members).
    func isSame(as other: PartialBroadcast) -> Bool {
        operation == other.operation && seq == other.seq && opId == other.opId && origin == other.origin && parts == other.parts
    }
}
