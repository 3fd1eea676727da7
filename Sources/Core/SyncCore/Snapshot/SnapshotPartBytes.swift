import JSON

extension ServerMessage {
    /// The bytes of a snapshot's Create part, `{"operation":0,"orders":[…],"snapshot":{"seq":…,
    /// "part":…,"parts":…,"epoch":…}}`: what `encodedBytes()` gives for the same `applied`
    /// message, written straight from the orders (`Order.appendJSON(to:)`) with no `JSONObject`
    /// built. A million orders joined are a million orders encoded on the master's loop. Nil for
    /// a part carrying more (`applied`, `term`, `termStarts`: the last part of some snapshots),
    /// which `encodedBytes()` writes.
    static func snapshotCreateBytes(orders: [Order], part: SnapshotPart) -> [UInt8]? {
        guard part.applied.isEmpty, part.term == nil, part.termStarts == nil else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(128 + 256 * orders.count)
        func raw(_ text: StaticString) { text.withUTF8Buffer { out.append(contentsOf: $0) } }
        raw(#"{"operation":0,"orders":["#)
        for (k, order) in orders.enumerated() {
            if k > 0 { raw(",") }
            order.appendJSON(to: &out)
        }
        raw("],")
        appendSnapshotMember(seq: part.seq, part: part.part, parts: part.parts, epoch: part.epoch, to: &out)
        raw("}")
        return out
    }

    /// Writes `"snapshot":{"seq":…,"part":…,"parts":…,"epoch":…}` (no epoch when nil): the
    /// member every snapshot part ends with, as `JSONValue` would serialize it.
    static func appendSnapshotMember(seq: Int64, part: Int, parts: Int, epoch: String?, to out: inout [UInt8]) {
        out.append(contentsOf: #""snapshot":{"seq":"#.utf8)
        JSONValue.appendSerialized(int: seq, to: &out)
        out.append(contentsOf: #","part":"#.utf8)
        JSONValue.appendSerialized(int: Int64(part), to: &out)
        out.append(contentsOf: #","parts":"#.utf8)
        JSONValue.appendSerialized(int: Int64(parts), to: &out)
        if let epoch {
            out.append(contentsOf: #","epoch":"#.utf8)
            JSONValue.appendSerialized(string: epoch, to: &out)
        }
        out.append(contentsOf: "}".utf8)
    }
}
