import JSON

/// What the master sends to terminals.
public enum ServerMessage: Equatable, Sendable {
    /// An applied operation (broadcast), or a part of the snapshot sent after connecting. `part`
    /// is set on each message of a broadcast sent in several (`BroadcastParts`); nil for a
    /// broadcast in one message.
    case applied(
        operation: OperationKind, orders: [Order], seq: Int64?, opId: String?, origin: String?, snapshot: SnapshotPart?,
        part: BroadcastPart? = nil)
    /// The snapshot (or catch-up) is complete; live operations follow.
    case ready(seq: Int64, epoch: String?, store: String?)
    /// A rejection, for the sender only.
    case error(WireError, opId: String?, operation: OperationKind?)
    /// Sent on an idle link to OrderSync slaves: the master's latest sequence number, so a
    /// slave notices what it missed.
    case heartbeat(seq: Int64)
    /// The outcome of an operation that carried an `opId`, for the sender only.
    case result(opId: String, seq: Int64?, applied: Int, unchanged: Int, failed: Int)

    /// JSON text of this message. `applied` uses the StorePOS shape with extra members.
    public func encoded() -> String { JSONValue.object(jsonObject()).serialized() }

    /// The same JSON text as its UTF-8 bytes, as the wire carries it (no `String` made).
    public func encodedBytes() -> [UInt8] {
        if case let .applied(operation, orders, seq, opId, origin, nil, nil) = self {
            return Self.appliedBytes(operation: operation, orders: orders, seq: seq, opId: opId, origin: origin, term: nil)
        }
        return JSONValue.object(jsonObject()).serializedBytes()
    }

    /// The bytes of an `applied` message that is neither a snapshot part nor a broadcast part,
    /// followed by `term` when given (the master's broadcast): what `jsonObject()` with `term`
    /// added last gives, written straight from the orders (`Order.appendJSON(to:)`) with no
    /// `JSONObject` built, once per operation on the master's hot path.
    public static func appliedBytes(
        operation: OperationKind, orders: [Order], seq: Int64?, opId: String?, origin: String?, term: Int64?
    ) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(96 + 256 * orders.count)
        func raw(_ text: StaticString) { text.withUTF8Buffer { out.append(contentsOf: $0) } }
        func int(_ member: StaticString, _ value: Int64?) {
            guard let value else { return }
            raw(member)
            JSONValue.appendSerialized(int: value, to: &out)
        }
        func string(_ member: StaticString, _ value: String?) {
            guard let value else { return }
            raw(member)
            JSONValue.appendSerialized(string: value, to: &out)
        }
        int(#"{"operation":"#, Int64(operation.rawValue))
        raw(#","orders":["#)
        for (k, order) in orders.enumerated() {
            if k > 0 { raw(",") }
            order.appendJSON(to: &out)
        }
        raw("]")
        int(#","seq":"#, seq)
        string(#","opId":"#, opId)
        string(#","origin":"#, origin)
        int(#","term":"#, term)
        raw("}")
        return out
    }

    /// The members of this message, as `encoded()` writes them.
    public func jsonObject() -> JSONObject {
        var o = JSONObject()
        switch self {
        case let .applied(operation, orders, seq, opId, origin, snapshot, part):
            o["operation"] = .int(Int64(operation.rawValue))
            o["orders"] = .array(orders.map { .object($0.json) })
            if let s = seq { o["seq"] = .int(s) }
            if let id = opId { o["opId"] = .string(id) }
            if let org = origin { o["origin"] = .string(org) }
            if let snap = snapshot {
                var s = JSONObject()
                s["seq"] = .int(snap.seq)
                s["part"] = .int(Int64(snap.part))
                s["parts"] = .int(Int64(snap.parts))
                if let e = snap.epoch { s["epoch"] = .string(e) }
                if !snap.applied.isEmpty {
                    s["applied"] = .object(JSONObject(snap.applied.sorted { $0.key < $1.key }.map { ($0.key, .int($0.value)) }))
                }
                if let t = snap.term { s["term"] = .int(t) }
                if let t = snap.termStarts { s["termStarts"] = .object(t.json) }
                o["snapshot"] = .object(s)
            }
            if let p = part {
                o["part"] = .int(Int64(p.part))
                o["parts"] = .int(Int64(p.parts))
            }
        case let .ready(seq, epoch, store):
            o["type"] = .string("ready")
            o["seq"] = .int(seq)
            if let e = epoch { o["epoch"] = .string(e) }
            if let s = store { o["store"] = .string(s) }
        case let .error(err, opId, operation):
            o["type"] = .string("error")
            o["code"] = .string(err.code.rawValue)
            o["message"] = .string(err.message)
            if let u = err.uuid { o["uuid"] = .string(u) }
            if let i = err.index { o["index"] = .int(Int64(i)) }
            if let c = err.current { o["current"] = .object(c.json) }
            if let wait = err.retryAfterMillis { o["retryAfterMs"] = .int(wait) }
            if let id = opId { o["opId"] = .string(id) }
            if let op = operation { o["operation"] = .int(Int64(op.rawValue)) }
        case let .heartbeat(seq):
            o["type"] = .string("heartbeat")
            o["seq"] = .int(seq)
        case let .result(opId, seq, applied, unchanged, failed):
            o["type"] = .string("result")
            o["opId"] = .string(opId)
            o["seq"] = seq.map { .int($0) } ?? .null
            o["applied"] = .int(Int64(applied))
            o["unchanged"] = .int(Int64(unchanged))
            o["failed"] = .int(Int64(failed))
        }
        return o
    }

    /// Decodes a message from the master given as text (tests and tools; the wire uses bytes).
    public static func decode(_ text: String) -> Result<ServerMessage, WireError> {
        decode(Array(text.utf8))
    }

    /// Decodes a message from the master (used by slaves): the UTF-8 bytes of its JSON text, as
    /// received.
    public static func decode(_ bytes: [UInt8]) -> Result<ServerMessage, WireError> {
        let value: JSONValue
        do {
            // The last snapshot part's `applied` lists up to `HelloMessage.maxPending` ids.
            value = try JSONParser.parse(bytes, maxMembersPerObject: max(JSONParser.peerMaxMembersPerObject, HelloMessage.maxPending))
        } catch {
            return .failure(WireError(.malformedJSON, "message from master is not valid JSON: \(error)"))
        }
        return decode(value)
    }

    /// Decodes a message from the master already parsed (a standby looks at its `type` and
    /// `term` first).
    public static func decode(_ value: JSONValue) -> Result<ServerMessage, WireError> {
        guard let o = value.objectValue else {
            return .failure(WireError(.invalidMessage, "message from master must be an object"))
        }
        if let t = o["type"]?.stringValue {
            switch t {
            case "ready":
                return .success(.ready(seq: o["seq"]?.intValue ?? 0, epoch: o["epoch"]?.stringValue, store: o["store"]?.stringValue))
            case "error":
                let code = WireErrorCode(rawValue: o["code"]?.stringValue ?? "") ?? .invalidMessage
                var err = WireError(
                    code, o["message"]?.stringValue ?? "", uuid: o["uuid"]?.stringValue,
                    index: o["index"]?.intValue.map { Int($0) })
                if let c = o["current"]?.objectValue { err.current = try? OrderFields.storedOrder(from: c, index: nil) }
                if let wait = o["retryAfterMs"]?.intValue, wait >= 0 { err.retryAfterMillis = wait }
                let op = o["operation"]?.intValue.flatMap { OperationKind(rawValue: Int($0)) }
                return .success(.error(err, opId: o["opId"]?.stringValue, operation: op))
            case "heartbeat":
                return .success(.heartbeat(seq: o["seq"]?.intValue ?? 0))
            case "result":
                guard let id = o["opId"]?.stringValue else {
                    return .failure(WireError(.invalidMessage, "result without opId"))
                }
                return .success(
                    .result(
                        opId: id, seq: o["seq"]?.intValue, applied: Int(o["applied"]?.intValue ?? 0),
                        unchanged: Int(o["unchanged"]?.intValue ?? 0), failed: Int(o["failed"]?.intValue ?? 0)))
            default:
                return .failure(WireError(.invalidMessage, "unknown message type \(t)"))
            }
        }
        guard let n = o["operation"]?.intValue, let kind = OperationKind(rawValue: Int(n)) else {
            return .failure(WireError(.unknownOperation, "message from master has no valid operation"))
        }
        guard let raw = o["orders"]?.arrayValue else {
            return .failure(WireError(.invalidMessage, "message from master has no orders array"))
        }
        var orders: [Order] = []
        for (i, v) in raw.enumerated() {
            guard let obj = v.objectValue else {
                return .failure(WireError(.invalidMessage, "order \(i) from master is not an object", index: i))
            }
            if kind == .remove, obj["created"] == nil {
                do {
                    let u = try OrderFields.uuid(of: obj, index: i)
                    orders.append(Order(uuid: u, customerName: "", created: OrderTimestamp(epochMillis: 0)))
                } catch let e as WireError { return .failure(e) } catch { return .failure(WireError(.invalidMessage, "\(error)")) }
                continue
            }
            do { orders.append(try OrderFields.storedOrder(from: obj, index: i)) } catch let e as WireError {
                return .failure(e)
            } catch { return .failure(WireError(.invalidMessage, "\(error)")) }
        }
        var snapshot: SnapshotPart?
        if let s = o["snapshot"]?.objectValue {
            var applied: [String: Int64] = [:]
            for m in s["applied"]?.objectValue?.members ?? [] { if let q = m.value.intValue { applied[m.key] = q } }
            snapshot = SnapshotPart(
                seq: s["seq"]?.intValue ?? 0, part: Int(s["part"]?.intValue ?? 1),
                parts: Int(s["parts"]?.intValue ?? 1), epoch: s["epoch"]?.stringValue, applied: applied)
            snapshot?.term = s["term"]?.intValue
            snapshot?.termStarts = s["termStarts"]?.objectValue.map(TermStarts.init(json:))
        }
        var part: BroadcastPart?
        if o["part"] != nil || o["parts"] != nil {
            guard let k = o["part"]?.intValue, let n = o["parts"]?.intValue, n >= 1, n <= BroadcastPart.maxParts, k >= 1, k <= n
            else {
                return .failure(
                    WireError(.invalidMessage, "broadcast part needs part and parts with 1 <= part <= parts <= \(BroadcastPart.maxParts)"))
            }
            guard snapshot == nil, o["seq"]?.intValue != nil else {
                return .failure(WireError(.invalidMessage, "a broadcast part carries a seq and is no snapshot part"))
            }
            part = BroadcastPart(part: Int(k), parts: Int(n))
        }
        return .success(
            .applied(
                operation: kind, orders: orders, seq: o["seq"]?.intValue, opId: o["opId"]?.stringValue,
                origin: o["origin"]?.stringValue, snapshot: snapshot, part: part))
    }
}
