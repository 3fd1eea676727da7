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
        raw(#"],"snapshot":{"seq":"#)
        JSONValue.appendSerialized(int: part.seq, to: &out)
        raw(#","part":"#)
        JSONValue.appendSerialized(int: Int64(part.part), to: &out)
        raw(#","parts":"#)
        JSONValue.appendSerialized(int: Int64(part.parts), to: &out)
        if let epoch = part.epoch {
            raw(#","epoch":"#)
            JSONValue.appendSerialized(string: epoch, to: &out)
        }
        raw("}}")
        return out
    }
}
