import JSON

/// The orders a batch leaves behind, as head office's `ordersync.orders` keeps them: each order
/// as its last broadcast in the batch shows it (the journal keeps each order as it was right
/// after its entry), one row per order.
public struct OrderRow: Equatable, Sendable {
    /// The UUID in lower case (orders compare case-insensitively).
    public var uuid: String
    /// The order's JSON object as broadcast.
    public var order: JSONObject
    /// The order's version (0 when a removal did not carry it).
    public var version: Int64
    /// True when the entry removed it.
    public var removed: Bool
    /// The seq of the entry it comes from.
    public var seq: Int64

    /// A text member, or nil.
    public func text(_ key: String) -> String? { order[key]?.stringValue }
    /// An integer member, or nil.
    public func int(_ key: String) -> Int64? { order[key]?.intValue }

    /// The last state of each order the entries name, in order of first appearance; an entry
    /// whose message is not a broadcast object is skipped (the journal keeps it all the same).
    public static func collapse(_ entries: [RollupEntry]) -> [OrderRow] {
        var index: [String: Int] = [:]
        var rows: [OrderRow] = []
        for e in entries {
            guard let message = (try? JSONParser.parse(e.message))?.objectValue,
                let orders = message["orders"]?.arrayValue
            else { continue }
            for value in orders {
                guard let o = value.objectValue, let uuid = o["uuid"]?.stringValue else { continue }
                let row = OrderRow(
                    uuid: uuid.lowercased(), order: o, version: o["version"]?.intValue ?? 0, removed: e.operation == 2,
                    seq: e.seq)
                if let i = index[row.uuid] {
                    rows[i] = row
                } else {
                    index[row.uuid] = rows.count
                    rows.append(row)
                }
            }
        }
        return rows
    }
}
