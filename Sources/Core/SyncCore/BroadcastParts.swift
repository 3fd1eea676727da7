import JSON

/// Cuts a broadcast (an applied operation, `ServerMessage.applied`) that encodes to more than a
/// part bound into several messages, split by bytes at order boundaries, so that no message the
/// master sends outgrows what a link seals or a terminal accepts. Pure.
///
/// Each part is a complete StorePOS-shaped message: the operation, a run of the orders, the
/// broadcast's other members (`seq`, `opId`, `origin`) and `"part":k,"parts":n`. A plain StorePOS
/// app applies each part as it applies any broadcast (it ignores members it does not know); an
/// OrderSync slave collects the parts of one sequence and applies them as one operation
/// (`SlaveEngine`). The journal keeps one entry per operation: parts are cut when sending.
/// `Docs/PROTOCOL.md` 4.7 has the rules.
public enum BroadcastParts {
    /// The default bound on one part's encoded size: 1 MiB, the default largest message a
    /// terminal accepts.
    public static let defaultPartBytes = 1 << 20
    /// The smallest part bound accepted: an order (at most `OperationPlanner.maxOrderBytes`, its
    /// unknown members included) and the message's own members always fit.
    public static let minimumPartBytes = 128 << 10

    /// The messages for the broadcast of `orders`: one message (no `part` member) when it
    /// encodes to at most `partBytes`, else parts of at most `partBytes` each (an order that
    /// alone outgrows the bound goes in a part of its own).
    public static func messages(
        operation: OperationKind, orders: [Order], seq: Int64, opId: String?, origin: String?, partBytes: Int
    ) -> [[UInt8]] {
        let envelope = ServerMessage.applied(
            operation: operation, orders: [], seq: seq, opId: opId, origin: origin, snapshot: nil
        ).jsonObject()
        return messages(envelope: envelope, orders: orders.map { .object($0.json) }, partBytes: partBytes)
    }

    /// The messages for a broadcast already encoded as `bytes` (a journal entry): `bytes`
    /// themselves when they fit in `partBytes` (or are not a broadcast), else its parts, cut from
    /// its JSON as it stands (every member kept as written). Only a broadcast to be cut is parsed.
    public static func messages(of bytes: [UInt8], partBytes: Int) -> [[UInt8]] {
        guard bytes.count > partBytes, case .object(var envelope)? = try? JSONParser.parse(bytes),
            let orders = envelope["orders"]?.arrayValue, envelope["operation"] != nil
        else { return [bytes] }
        envelope["orders"] = .array([])
        return messages(envelope: envelope, orders: orders, partBytes: partBytes)
    }

    /// Groups `orders` greedily, in order, into runs whose message (`envelope` with the run as
    /// its `orders`, and the part members) encodes to at most `partBytes`.
    static func messages(envelope: JSONObject, orders: [JSONValue], partBytes: Int) -> [[UInt8]] {
        let bound = max(partBytes, minimumPartBytes)
        var whole = envelope
        whole["orders"] = .array(orders)
        let wholeBytes = JSONValue.object(whole).serializedByteCount
        guard wholeBytes > bound else { return [JSONValue.object(whole).serializedBytes()] }
        // The envelope with the widest part members: every part's own members fit in this.
        var widest = envelope
        widest["part"] = .int(Int64(BroadcastPart.maxParts))
        widest["parts"] = .int(Int64(BroadcastPart.maxParts))
        let room = max(1, bound - JSONValue.object(widest).serializedByteCount)
        var runs: [Range<Int>] = []
        var start = 0
        var bytes = 0
        for (i, order) in orders.enumerated() {
            // The order and the comma before it.
            let size = order.serializedByteCount + 1
            if i > start, bytes + size > room {
                runs.append(start..<i)
                start = i
                bytes = 0
            }
            bytes += size
        }
        runs.append(start..<orders.count)
        return runs.enumerated().map { k, run in
            var part = envelope
            part["orders"] = .array(Array(orders[run]))
            part["part"] = .int(Int64(k + 1))
            part["parts"] = .int(Int64(runs.count))
            return JSONValue.object(part).serializedBytes()
        }
    }
}
