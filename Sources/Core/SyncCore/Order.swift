import JSON

/// One order, with the StorePOS fields plus what OrderSync adds.
///
/// Wire names: `uuid`, `customerName`, `created`, `shippingMethod`, `tableName`, `tableSize`
/// (StorePOS); `version` (OrderSync: 1 when created, +1 on every applied change), `status`,
/// `items`, `note`. Members this node does not know are kept in `extra` and sent on unchanged.
public struct Order: Equatable, Sendable {
    /// The order's UUID as its creator wrote it; compared case-insensitively.
    public var uuid: String
    /// Customer name; empty when not given.
    public var customerName: String
    /// When the order was created, with its original UTC offset.
    public var created: OrderTimestamp
    /// Shipping method (StorePOS: "DHL", ...), if any.
    public var shippingMethod: String?
    /// Table name, if any.
    public var tableName: String?
    /// Table size (StorePOS uses -1 for "no table"), if any.
    public var tableSize: Int64?
    /// Members not known to this version, kept verbatim.
    public var extra: JSONObject
    /// Version assigned by the master: 1 on create, +1 on every applied update.
    public var version: Int64
    /// Where the order is in its life.
    public var status: OrderStatus
    /// Line items, if the POS sends them.
    public var items: [LineItem]?
    /// A free-text note ("no nuts"), if any.
    public var note: String?

    /// An order from its fields.
    public init(
        uuid: String, customerName: String, created: OrderTimestamp, shippingMethod: String? = nil,
        tableName: String? = nil, tableSize: Int64? = nil, extra: JSONObject = JSONObject(),
        version: Int64 = 1, status: OrderStatus = .open, items: [LineItem]? = nil, note: String? = nil
    ) {
        self.uuid = uuid
        self.customerName = customerName
        self.created = created
        self.shippingMethod = shippingMethod
        self.tableName = tableName
        self.tableSize = tableSize
        self.extra = extra
        self.version = version
        self.status = status
        self.items = items
        self.note = note
    }

    /// The key under which orders are compared and stored: the UUID in lower case.
    public var key: String { uuid.lowercased() }

    /// True when both orders carry the same content, ignoring `version`.
    public func sameContent(as other: Order) -> Bool {
        var a = self
        a.version = other.version
        a.uuid = a.uuid.lowercased()
        var b = other
        b.uuid = b.uuid.lowercased()
        return a == b
    }

    /// The order as a JSON object in the StorePOS shape, plus `version` and extra members.
    public var json: JSONObject {
        var o = JSONObject()
        o["uuid"] = .string(uuid)
        o["customerName"] = .string(customerName)
        o["created"] = .string(created.storePOSText)
        if let v = shippingMethod { o["shippingMethod"] = .string(v) }
        if let v = tableName { o["tableName"] = .string(v) }
        if let v = tableSize { o["tableSize"] = .int(v) }
        o["version"] = .int(version)
        o["status"] = .string(status.rawValue)
        if let i = items { o["items"] = .array(i.map { .object($0.json) }) }
        if let n = note { o["note"] = .string(n) }
        for m in extra.members where o[m.key] == nil { o[m.key] = m.value }
        return o
    }

    /// Appends the order's JSON to `out`: the bytes `JSONValue.object(json).serializedBytes()`
    /// gives, written straight from the fields with no `JSONObject` built (the master writes
    /// every order it applies twice: for its size, and in the broadcast).
    public func appendJSON(to out: inout [UInt8]) {
        func raw(_ text: StaticString) { text.withUTF8Buffer { out.append(contentsOf: $0) } }
        func string(_ member: StaticString, _ value: String) {
            raw(member)
            JSONValue.appendSerialized(string: value, to: &out)
        }
        func int(_ member: StaticString, _ value: Int64) {
            raw(member)
            JSONValue.appendSerialized(int: value, to: &out)
        }
        string(#"{"uuid":"#, uuid)
        string(#","customerName":"#, customerName)
        // The StorePOS form has nothing to escape.
        raw(#","created":""#)
        created.appendStorePOSText(to: &out)
        raw(#"""#)
        if let v = shippingMethod { string(#","shippingMethod":"#, v) }
        if let v = tableName { string(#","tableName":"#, v) }
        if let v = tableSize { int(#","tableSize":"#, v) }
        int(#","version":"#, version)
        string(#","status":"#, status.rawValue)
        if let i = items {
            raw(#","items":"#)
            JSONValue.array(i.map { .object($0.json) }).appendSerialized(to: &out)
        }
        if let n = note { string(#","note":"#, n) }
        for m in extra.members where !hasMember(m.key) {
            raw(",")
            JSONValue.appendSerialized(string: m.key, to: &out)
            raw(":")
            m.value.appendSerialized(to: &out)
        }
        raw("}")
    }

    /// The bytes of the order's JSON (`appendJSON(to:)`).
    public var jsonBytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        appendJSON(to: &out)
        return out
    }

    /// True when `json` has a member `key` of its own (not from `extra`).
    private func hasMember(_ key: String) -> Bool {
        switch key {
        case "uuid", "customerName", "created", "version", "status": return true
        case "shippingMethod": return shippingMethod != nil
        case "tableName": return tableName != nil
        case "tableSize": return tableSize != nil
        case "items": return items != nil
        case "note": return note != nil
        default: return false
        }
    }

    /// Checks that `text` is a UUID in the 8-4-4-4-12 hexadecimal form (either case).
    public static func isValidUUID(_ text: String) -> Bool {
        let b = Array(text.utf8)
        guard b.count == 36 else { return false }
        for (i, c) in b.enumerated() {
            if i == 8 || i == 13 || i == 18 || i == 23 {
                if c != UInt8(ascii: "-") { return false }
            } else if !((c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66)) {
                return false
            }
        }
        return true
    }
}
