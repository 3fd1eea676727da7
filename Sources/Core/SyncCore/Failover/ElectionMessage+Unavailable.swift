import JSON

/// A voter's answer to `fetch` when it cannot send a tail without a gap: its journal begins
/// after the last seq both histories share (compacted, or emptied by a snapshot), so the entries
/// right after it are gone. It is a `fetched` with `"unavailable":true` and the shared seq, so
/// a candidate that does not know the member reads "nothing more" and tries the next voter.
extension ElectionMessage {
    /// `{"type":"fetched","seq":S,"unavailable":true}`.
    public static func tailUnavailable(shared seq: Int64) -> [UInt8] {
        JSONValue.object(JSONObject([("type", .string("fetched")), ("seq", .int(seq)), ("unavailable", .bool(true))]))
            .serializedBytes()
    }

    /// Whether `bytes` is a `fetched` that says the tail is unavailable.
    public static func isTailUnavailable(_ bytes: [UInt8]) -> Bool {
        guard let o = (try? JSONParser.parse(bytes))?.objectValue, o["type"]?.stringValue == "fetched" else { return false }
        return o["unavailable"] == .bool(true)
    }
}
