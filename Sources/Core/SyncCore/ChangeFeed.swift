import JSON

/// The change feed's pure parts (Docs/API.md, "Change feed"): what one change looks like, the
/// cursor rule (a reader too far behind must take a new snapshot), and the server-sent event
/// framing. The node reads the changes from its store and carries the bytes.
public enum ChangeFeed {
    /// Most changes in one answer.
    public static let maxLimit = 1000
    /// Changes in one answer unless `limit` says otherwise.
    public static let defaultLimit = 100
    /// The longest long-poll wait, in seconds.
    public static let maxTimeoutSeconds = 60
    /// How many rows a slave's feed table keeps (the oldest go first).
    public static let slaveFeedKept: Int64 = 100_000

    /// What a cursor may read.
    public enum CursorCheck: Equatable, Sendable {
        /// Changes after the cursor can be answered exactly.
        case ok
        /// The cursor is older than the oldest change kept, newer than the last one, or from
        /// another database (epoch): the reader must reload everything and start from `last`.
        case resnapshotRequired(String)
    }

    /// Checks a cursor: `since` against the lowest cursor still answerable (`oldest`: one less
    /// than the oldest change kept) and the last change; `epoch` (when the reader gives one)
    /// against the node's.
    public static func check(since: Int64, epoch: String?, nodeEpoch: String, oldest: Int64, last: Int64) -> CursorCheck {
        if let e = epoch, e != nodeEpoch {
            return .resnapshotRequired("the cursor is from another database (epoch \(e), this node has \(nodeEpoch))")
        }
        if since < oldest {
            return .resnapshotRequired("changes after \(since) are no longer kept (the oldest kept follows \(oldest))")
        }
        if since > last {
            return .resnapshotRequired("the cursor \(since) is ahead of this node's last change \(last) (another database?)")
        }
        return .ok
    }

    /// An order as the feed shows it: the whole order, or for a removal a tombstone
    /// `{"uuid","removed":true,"version"}`.
    public static func orderJSON(_ order: Order, removed: Bool) -> JSONValue {
        guard removed else { return .object(order.json) }
        return .object(JSONObject([("uuid", .string(order.uuid)), ("removed", .bool(true)), ("version", .int(order.version))]))
    }

    /// The change a master journal entry records, as its broadcast carried it: the orders as they
    /// were right after that entry (not as they are now). Without `seq`, which the caller puts first.
    public static func masterChange(_ entry: JournalEntry) -> JSONObject {
        var orders: [JSONValue] = []
        if case .success(.applied(_, let list, _, _, _, _, _)) = ServerMessage.decode(entry.message) {
            orders = list.map { orderJSON($0, removed: entry.operation == .remove) }
        } else {
            // Not expected (the journal keeps the broadcast as sent): the UUIDs at least.
            orders = entry.orderUUIDs.map { .object(JSONObject([("uuid", .string($0))])) }
        }
        var o = JSONObject()
        o["operation"] = .string(entry.operation.description)
        o["orders"] = .array(orders)
        o["origin"] = .string(entry.origin)
        o["at"] = .string(isoUTC(millis: entry.recordedAtMillis))
        o["opId"] = entry.opId.map { .string($0) } ?? .null
        return o
    }

    /// One change as the JSON text of its object with `seq` first: `{"seq":N,...}`.
    public static func changeText(seq: Int64, _ body: JSONObject) -> String {
        var o = JSONObject([("seq", .int(seq))])
        for m in body.members where m.key != "seq" { o[m.key] = m.value }
        return JSONValue.object(o).serialized()
    }

    /// The same, from a change already serialized without `seq` (a slave's feed row): the
    /// object's text with `"seq":N,` spliced in after its opening brace.
    public static func changeText(seq: Int64, storedBody text: String) -> String {
        guard text.first == "{" else { return text }
        let rest = text.dropFirst()
        return rest.first == "}" ? "{\"seq\":\(seq)}" : "{\"seq\":\(seq)," + rest
    }

    /// One server-sent event (HTML Living Standard, 9.2 "Server-sent events"): "id", "event"
    /// and "data" fields, ended by a blank line. The data is one line of JSON (serialized JSON
    /// escapes every line break), so it needs one "data:" field.
    public static func sseEvent(seq: Int64, changeText: String) -> String {
        "id: \(seq)\nevent: change\ndata: \(changeText)\n\n"
    }

    /// A comment line keeps idle connections open: "Lines that begin with a colon are ignored".
    public static let sseKeepalive = ": keepalive\n\n"

    /// `2026-11-25T15:00:00.123Z`.
    public static func isoUTC(millis: Int64) -> String {
        let secs = Int64((Double(millis) / 1000).rounded(.down))
        let ms = millis - secs * 1000
        let days = Int64((Double(secs) / 86_400).rounded(.down))
        let rem = secs - days * 86_400
        let (y, m, d) = OrderTimestamp.civil(fromDays: days)
        func pad(_ v: Int64, _ n: Int) -> String {
            var s = String(v)
            while s.count < n { s = "0" + s }
            return s
        }
        return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))T\(pad(rem / 3600, 2)):\(pad(rem / 60 % 60, 2)):\(pad(rem % 60, 2)).\(pad(ms, 3))Z"
    }
}

/// What a slave's feed records, in the same transaction as the change (Docs/API.md, "Change
/// feed on a slave").
public enum SlaveFeedEvent: Equatable, Sendable {
    /// A change of the master's, applied to the replica (`seq`: the master's).
    case applied(operation: OperationKind, orders: [Order], masterSeq: Int64?, opId: String?, origin: String?)
    /// A local change, stored in the outbox and not yet answered by the master.
    case pending(operation: OperationKind, changes: [OrderChange], opId: String, origin: String?)
    /// The master's answer to a local change: applied (`masterSeq`) or refused (`errors`).
    case outcome(opId: String, masterSeq: Int64?, applied: [Order], errors: [WireError])
    /// The replica was replaced by the master's snapshot: a reader reloads every order.
    case snapshot(masterSeq: Int64, epoch: String?, orders: Int)

    /// The change's JSON object without `seq` (the feed table numbers it); `at` is when it was
    /// recorded (milliseconds since 1970).
    public func json(at millis: Int64) -> JSONObject {
        var o = JSONObject()
        switch self {
        case .applied(let op, let orders, let masterSeq, let opId, let origin):
            o["operation"] = .string(op.description)
            o["orders"] = .array(orders.map { ChangeFeed.orderJSON($0, removed: op == .remove) })
            o["masterSeq"] = masterSeq.map { .int($0) } ?? .null
            o["origin"] = origin.map { .string($0) } ?? .null
            o["at"] = .string(ChangeFeed.isoUTC(millis: millis))
            o["opId"] = opId.map { .string($0) } ?? .null
        case .pending(let op, let changes, let opId, let origin):
            o["operation"] = .string(op.description)
            o["orders"] = .array(
                changes.map { c in
                    if case .delete(let order) = c { return ChangeFeed.orderJSON(order, removed: true) }
                    return ChangeFeed.orderJSON(c.order, removed: false)
                })
            o["pending"] = .bool(true)
            o["origin"] = origin.map { .string($0) } ?? .null
            o["at"] = .string(ChangeFeed.isoUTC(millis: millis))
            o["opId"] = .string(opId)
        case .outcome(let opId, let masterSeq, let applied, let errors):
            o["operation"] = .string("outcome")
            o["opId"] = .string(opId)
            o["outcome"] = .string(errors.isEmpty ? "synced" : "rejected")
            o["masterSeq"] = masterSeq.map { .int($0) } ?? .null
            o["orders"] = .array(applied.map { .object($0.json) })
            if let e = errors.first { o["error"] = Self.errorJSON(e) }
            if errors.count > 1 { o["errors"] = .array(errors.map(Self.errorJSON)) }
            o["at"] = .string(ChangeFeed.isoUTC(millis: millis))
        case .snapshot(let masterSeq, let epoch, let count):
            o["operation"] = .string("snapshot")
            o["masterSeq"] = .int(masterSeq)
            o["epoch"] = epoch.map { .string($0) } ?? .null
            o["orderCount"] = .int(Int64(count))
            o["at"] = .string(ChangeFeed.isoUTC(millis: millis))
        }
        return o
    }

    private static func errorJSON(_ e: WireError) -> JSONValue {
        var x = JSONObject()
        x["code"] = .string(e.code.rawValue)
        x["message"] = .string(e.message)
        if let u = e.uuid { x["uuid"] = .string(u) }
        return .object(x)
    }
}
