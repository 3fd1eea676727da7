import JSON

/// One message of the operation ids a standby's snapshot covers (`Docs/PROTOCOL.md` 7.2):
/// `{"type":"opIds","seq":S,"part":k,"parts":n,"ids":[["<opId>",12],…]}`. They lead the
/// snapshot at `seq` (after `diverged`), only on the links of OrderSync slaves, cut so that each
/// message stays well within what a secure link seals in one (`partBytes`); the standby keeps
/// them in the snapshot's transaction, below its emptied journal.
public struct AppliedIdsPart: Equatable, Sendable {
    /// The seq of the snapshot they go with.
    public var seq: Int64
    /// This message's place, 1 ≤ `part` ≤ `parts` ≤ `maxParts`.
    public var part: Int
    public var parts: Int
    /// Operation ids and the seq each was applied at.
    public var ids: [String: Int64]

    /// The most bytes of ids one message carries (a secure link seals at most 1 MiB).
    public static let partBytes = 512 << 10
    /// The most messages one snapshot's ids take: 32 MiB of ids, far more than the 100,000 a
    /// master sends (4.7 MB of 36-character UUIDs); a standby keeps no more than that in memory.
    public static let maxParts = 64

    /// A part from its fields.
    public init(seq: Int64, part: Int, parts: Int, ids: [String: Int64]) {
        (self.seq, self.part, self.parts, self.ids) = (seq, part, parts, ids)
    }

    /// `ids` cut into messages of at most `partBytes` of ids each, by seq; none when empty.
    public static func parts(of ids: [String: Int64], seq: Int64, partBytes: Int = partBytes) -> [AppliedIdsPart] {
        var runs: [[String: Int64]] = []
        var run: [String: Int64] = [:]
        var bytes = 0
        for (id, at) in ids.sorted(by: { ($0.value, $0.key) < ($1.value, $1.key) }) {
            // `["<id>",<seq>],`: the id as JSON, the digits, and five more.
            let cost = JSONValue.string(id).serializedBytes().count + String(at).utf8.count + 5
            if bytes + cost > partBytes, !run.isEmpty {
                runs.append(run)
                (run, bytes) = ([:], 0)
            }
            run[id] = at
            bytes += cost
        }
        if !run.isEmpty { runs.append(run) }
        return runs.enumerated().map { AppliedIdsPart(seq: seq, part: $0.offset + 1, parts: runs.count, ids: $0.element) }
    }

    /// The message's JSON bytes (ids by seq).
    public func encodedBytes() -> [UInt8] {
        let list: [JSONValue] = ids.sorted(by: { ($0.value, $0.key) < ($1.value, $1.key) }).map {
            .array([.string($0.key), .int($0.value)])
        }
        return JSONValue.object(
            JSONObject([
                ("type", .string("opIds")), ("seq", .int(seq)), ("part", .int(Int64(part))), ("parts", .int(Int64(parts))),
                ("ids", .array(list)),
            ])
        ).serializedBytes()
    }

    /// The part `o` (an `opIds` message) holds, or why it is malformed.
    static func decode(_ o: JSONObject) -> Result<AppliedIdsPart, WireError> {
        guard let seq = o["seq"]?.intValue, seq >= 0, let part = o["part"]?.intValue, let parts = o["parts"]?.intValue,
            part >= 1, part <= parts, parts <= Int64(maxParts), let list = o["ids"]?.arrayValue
        else {
            return .failure(
                WireError(.invalidMessage, "opIds needs seq >= 0, 1 <= part <= parts <= \(maxParts) and an ids array"))
        }
        var ids: [String: Int64] = [:]
        for v in list {
            guard let pair = v.arrayValue, pair.count == 2, let id = pair[0].stringValue, !id.isEmpty, let at = pair[1].intValue,
                at >= 1, at <= seq
            else {
                return .failure(WireError(.invalidMessage, "opIds entries are [opId, seq] with 1 <= seq <= \(seq)"))
            }
            ids[id] = at
        }
        return .success(AppliedIdsPart(seq: seq, part: Int(part), parts: Int(parts), ids: ids))
    }
}

/// The `opIds` parts of one snapshot a standby has received so far, in order.
struct AppliedIdsCollection {
    var seq: Int64
    var parts: Int
    var received: Int
    var ids: [String: Int64]

    /// True when every part arrived.
    var isComplete: Bool { received == parts }

    /// Adds `p`: the next part of this collection, or the first of a new one (what was
    /// collected before is dropped). False when `p` is neither (a part is missing).
    mutating func add(_ p: AppliedIdsPart) -> Bool {
        if p.part == 1 {
            self = AppliedIdsCollection(seq: p.seq, parts: p.parts, received: 1, ids: p.ids)
            return true
        }
        guard p.seq == seq, p.parts == parts, p.part == received + 1 else { return false }
        received = p.part
        ids.merge(p.ids) { a, _ in a }
        return true
    }
}
