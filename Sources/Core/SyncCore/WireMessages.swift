import JSON

/// The protocol name carried in DNS-SD TXT records (`proto=`) and in `hello`.
public let orderSyncProtocolName = "ordersync/1"
/// The WebSocket subprotocol an OrderSync slave asks for; StorePOS terminals ask for none.
public let orderSyncSubprotocol = "ordersync.v1"

/// A StorePOS operation message: `{"operation":0|1|2,"orders":[...]}` plus optional `opId`.
public struct OperationMessage: Equatable, Sendable {
    /// Create, Update or Remove.
    public var operation: OperationKind
    /// The order objects, still raw: each is validated on its own so one bad order does not
    /// reject the others.
    public var orders: [JSONValue]
    /// Operation id chosen by the origin (a UUID), if it sent one.
    public var opId: String?

    /// A message from its fields.
    public init(operation: OperationKind, orders: [JSONValue], opId: String? = nil) {
        self.operation = operation
        self.orders = orders
        self.opId = opId
    }

    /// The message as JSON text in the StorePOS shape.
    public func encoded() -> String { String(decoding: encodedBytes(), as: UTF8.self) }

    /// The same JSON text as its UTF-8 bytes, as the wire and the outbox carry it.
    public func encodedBytes() -> [UInt8] {
        var o = JSONObject()
        o["operation"] = .int(Int64(operation.rawValue))
        o["orders"] = .array(orders)
        if let id = opId { o["opId"] = .string(id) }
        return JSONValue.object(o).serializedBytes()
    }
}

/// The first message of an OrderSync slave after the WebSocket handshake.
public struct HelloMessage: Equatable, Sendable {
    /// Stable id of the terminal (kept in its data dir).
    public var terminalId: String
    /// Display name of the terminal.
    public var terminalName: String
    /// The store it belongs to, if it knows.
    public var store: String?
    /// Last sequence number it applied, with the epoch it belongs to.
    public var lastSeq: Int64
    /// Epoch of `lastSeq`, if any.
    public var epoch: String?
    /// The protocol the slave speaks (`ordersync/1`), as it said.
    public var proto: String?
    /// Operation ids still in its outbox, oldest first (at most `HelloMessage.maxPending`): a
    /// snapshot says which of them it already holds.
    public var pending: [String] = []
    /// How many changes its outbox holds (all of them, where `pending` lists at most
    /// `maxPending`); nil from a slave that does not say (an older build).
    public var outbox: Int?
    /// The slave's `sync.term` and the term of its entry at `lastSeq` (`Docs/PROTOCOL.md` 7.1);
    /// nil from a build before terms (term 1).
    public var term: Int64?
    public var lastTerm: Int64?
    /// The slave's term starts (`sync.term_starts`): the master finds the last entry both
    /// histories share by them (`Docs/PROTOCOL.md` 7, "Divergence across terms"); nil from a
    /// build that does not send them (the master falls back to `TermStarts.keep`).
    public var termStarts: TermStarts?
    /// The slave's wall clock when it sent the hello, in milliseconds since 1970: the master's
    /// first sample of its clock (`Docs/PROTOCOL.md` 4.8); nil from a build that does not say.
    public var time: Int64?

    /// Most operation ids a hello lists.
    public static let maxPending = 5000

    /// A hello from its fields.
    public init(terminalId: String, terminalName: String, store: String?, lastSeq: Int64, epoch: String?) {
        self.terminalId = terminalId
        self.terminalName = terminalName
        self.store = store
        self.lastSeq = lastSeq
        self.epoch = epoch
        self.proto = orderSyncProtocolName
    }

    /// JSON text of this hello.
    public func encoded() -> String { String(decoding: encodedBytes(), as: UTF8.self) }

    /// The same JSON text as its UTF-8 bytes, as the wire carries it.
    public func encodedBytes() -> [UInt8] {
        var o = JSONObject()
        o["type"] = .string("hello")
        if let p = proto { o["proto"] = .string(p) }
        o["terminal"] = .string(terminalId)
        o["name"] = .string(terminalName)
        if let s = store { o["store"] = .string(s) }
        o["lastSeq"] = .int(lastSeq)
        if let e = epoch { o["epoch"] = .string(e) }
        if !pending.isEmpty { o["pending"] = .array(pending.prefix(HelloMessage.maxPending).map { .string($0) }) }
        if let n = outbox { o["outbox"] = .int(Int64(n)) }
        if let t = term { o["term"] = .int(t) }
        if let t = lastTerm { o["lastTerm"] = .int(t) }
        if let s = termStarts { o["termStarts"] = .object(s.json) }
        if let t = time { o["time"] = .int(t) }
        return JSONValue.object(o).serializedBytes()
    }
}

/// What a terminal may send to the master.
public enum ClientMessage: Equatable, Sendable {
    case operation(OperationMessage)
    case hello(HelloMessage)
    /// A slave has applied everything up to `seq` (sent after catching up, on heartbeats, and
    /// shortly after applying broadcasts or a change of its outbox), and holds `outbox` changes
    /// not yet answered by the master (nil from a slave that does not say). `held` is the
    /// highest sequence its standby copy holds on disk (its replica's last sequence, not capped
    /// by the outbox as `seq` is); nil from a slave that does not say. `clock` is set on the
    /// ack that answers a heartbeat carrying `time` (`Docs/PROTOCOL.md` 4.8).
    case ack(seq: Int64, outbox: Int?, held: Int64? = nil, clock: AckClock? = nil)

    /// The JSON text of an ack, as its UTF-8 bytes.
    public static func encodeAck(seq: Int64, outbox: Int? = nil, held: Int64? = nil, clock: AckClock? = nil) -> [UInt8] {
        var o = JSONObject([("type", .string("ack")), ("seq", .int(seq))])
        if let n = outbox { o["outbox"] = .int(Int64(n)) }
        if let h = held { o["held"] = .int(h) }
        if let c = clock {
            o["echo"] = .int(c.echo)
            o["time"] = .int(c.time)
        }
        return JSONValue.object(o).serializedBytes()
    }

    /// The optional `outbox` count of a hello or an ack: absent, or an integer of 0 or more.
    static func outboxCount(_ o: JSONObject, in type: String) -> Result<Int?, WireError> {
        guard let v = o["outbox"] else { return .success(nil) }
        guard case .int(let n) = v, n >= 0, n <= Int64(Int32.max) else {
            let got = v.typeName == "number" ? v.serialized() : v.typeName
            return .failure(WireError(.invalidMessage, "\(type) \"outbox\" must be an integer of 0 or more, got \(got)"))
        }
        return .success(Int(n))
    }

    /// Decodes one message given as text (tests and tools; the wire uses bytes).
    public static func decode(_ text: String) -> Result<ClientMessage, WireError> {
        decode(Array(text.utf8))
    }

    /// Decodes one message: the UTF-8 bytes of its JSON text, as received. Never traps; every
    /// problem is a `WireError` naming it.
    public static func decode(_ bytes: [UInt8]) -> Result<ClientMessage, WireError> {
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes, maxMembersPerObject: JSONParser.peerMaxMembersPerObject)
        } catch let e as JSONParseError where e.isLimitExceeded {
            return .failure(WireError(.tooLarge, "message refused: \(e)"))
        } catch let e as JSONParseError {
            return .failure(WireError(.malformedJSON, "message is not valid JSON: \(e)"))
        } catch {
            return .failure(WireError(.malformedJSON, "message is not valid JSON"))
        }
        guard let o = value.objectValue else {
            return .failure(WireError(.invalidMessage, "message must be a JSON object, got \(value.typeName)"))
        }
        if let t = o["type"] {
            switch t.stringValue {
            case "hello":
                return decodeHello(o)
            case "ack":
                guard let seq = o["seq"]?.intValue, seq >= 0 else {
                    return .failure(WireError(.invalidMessage, "ack needs a \"seq\" of 0 or more"))
                }
                return outboxCount(o, in: "ack").flatMap { n in
                    heldSeq(o).flatMap { h in AckClock.decode(o).map { .ack(seq: seq, outbox: n, held: h, clock: $0) } }
                }
            default:
                return .failure(WireError(.invalidMessage, "unknown message type \(t.serialized())"))
            }
        }
        guard let op = o["operation"] else {
            return .failure(WireError(.invalidMessage, "message has no \"operation\""))
        }
        // `1` or `1.0`: an integral number (JSON Schema counts both as integers).
        guard let n = op.intValue else {
            let got =
                op.typeName == "number"
                ? "a number that is not an integer" : op.typeName == "string" ? "the string \(op.serialized())" : op.typeName
            return .failure(
                WireError(.unknownOperation, "\"operation\" must be the integer 0 (Create), 1 (Update) or 2 (Remove), got \(got)"))
        }
        guard let kind = OperationKind(rawValue: Int(truncatingIfNeeded: n)), n >= 0, n <= 2 else {
            return .failure(WireError(.unknownOperation, "unknown operation \(n): expected 0 (Create), 1 (Update) or 2 (Remove)"))
        }
        guard let ordersValue = o["orders"] else {
            return .failure(WireError(.invalidMessage, "message has no \"orders\" array"))
        }
        guard let orders = ordersValue.arrayValue else {
            return .failure(WireError(.invalidMessage, "\"orders\" must be an array, got \(ordersValue.typeName)"))
        }
        var opId: String?
        if let v = o["opId"] {
            guard let s = v.stringValue, !s.isEmpty, s.utf8.count <= 128 else {
                return .failure(WireError(.invalidMessage, "\"opId\" must be a non-empty string of at most 128 bytes"))
            }
            opId = s
        }
        return .success(.operation(OperationMessage(operation: kind, orders: orders, opId: opId)))
    }

    private static func decodeHello(_ o: JSONObject) -> Result<ClientMessage, WireError> {
        guard let terminal = o["terminal"]?.stringValue, !terminal.isEmpty else {
            return .failure(WireError(.invalidMessage, "hello has no \"terminal\""))
        }
        let lastSeq = o["lastSeq"]?.intValue ?? 0
        var hello = HelloMessage(
            terminalId: terminal, terminalName: o["name"]?.stringValue ?? terminal,
            store: o["store"]?.stringValue, lastSeq: max(0, lastSeq), epoch: o["epoch"]?.stringValue)
        hello.proto = o["proto"]?.stringValue
        if let p = o["pending"] {
            let ids = p.arrayValue?.compactMap(\.stringValue) ?? []
            guard let list = p.arrayValue, list.count <= HelloMessage.maxPending, ids.count == list.count,
                ids.allSatisfy({ !$0.isEmpty && $0.utf8.count <= 128 })
            else {
                return .failure(
                    WireError(
                        .invalidMessage,
                        "hello \"pending\" must be an array of at most \(HelloMessage.maxPending) operation ids (strings of 1 to 128 bytes)"
                    ))
            }
            hello.pending = ids
        }
        switch outboxCount(o, in: "hello") {
        case .failure(let e): return .failure(e)
        case .success(let n): hello.outbox = n
        }
        hello.term = o["term"]?.intValue.map { max(1, $0) }
        hello.lastTerm = o["lastTerm"]?.intValue.map { max(1, $0) }
        if let value = o["termStarts"] {
            guard let starts = TermHistory.starts(json: value) else {
                return .failure(
                    WireError(
                        .invalidMessage,
                        "hello \"termStarts\" must be an object of terms to their first seq (integers of 1 or more)"))
            }
            hello.termStarts = TermStarts(starts)
        }
        hello.time = o["time"]?.intValue
        return .success(.hello(hello))
    }
}

/// Where a snapshot part belongs: the master's sequence at the snapshot and the part number.
public struct SnapshotPart: Equatable, Sendable {
    /// The master's last sequence number included in the snapshot.
    public var seq: Int64
    /// One-based part number.
    public var part: Int
    /// Number of parts.
    public var parts: Int
    /// Database epoch of the master.
    public var epoch: String?
    /// In the last part: the operation ids of the terminal's hello `pending` that the snapshot
    /// already holds, with their sequence numbers.
    public var applied: [String: Int64]
    /// In the last part: the term of the entry at `seq` and the lineage's term starts
    /// (`Docs/PROTOCOL.md` 7.1); nil from a build before terms.
    public var term: Int64?
    public var termStarts: TermStarts?

    /// A snapshot part from its fields.
    public init(seq: Int64, part: Int, parts: Int, epoch: String?, applied: [String: Int64] = [:]) {
        self.seq = seq
        self.part = part
        self.parts = parts
        self.epoch = epoch
        self.applied = applied
    }
}

/// Where one message of a broadcast sent in several (`BroadcastParts`) stands: part `part` of
/// `parts`, every one carrying the operation's `seq` and `opId`.
public struct BroadcastPart: Equatable, Sendable {
    /// Most parts one broadcast may be sent in: `MasterEngine.maxBroadcastBytes` in parts of
    /// at least 128 KiB.
    public static let maxParts = 256
    /// One-based part number.
    public var part: Int
    /// Number of parts.
    public var parts: Int

    /// A part from its fields.
    public init(part: Int, parts: Int) {
        self.part = part
        self.parts = parts
    }
}
