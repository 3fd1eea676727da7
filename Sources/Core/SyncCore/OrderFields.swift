import JSON

/// Reading order fields from wire JSON, with a precise error for every kind of bad input.
public enum OrderFields {
    /// Longest accepted text field, in UTF-8 bytes.
    public static let maxTextBytes = 4096
    /// Member names with a meaning in this protocol; anything else is kept in `Order.extra`.
    public static let known: Set<String> = [
        "uuid", "customerName", "created", "shippingMethod", "tableName", "tableSize", "version",
        "status", "items", "note",
    ]
    /// Most line items in one order.
    public static let maxItems = 500

    /// The `uuid` of an order object, validated.
    public static func uuid(of o: JSONObject, index: Int?) throws -> String {
        guard let v = o["uuid"] else {
            throw WireError(.invalidUUID, "order has no \"uuid\"", index: index)
        }
        guard let s = v.stringValue else {
            throw WireError(.invalidUUID, "\"uuid\" must be a string, got \(v.typeName)", index: index)
        }
        guard Order.isValidUUID(s) else {
            throw WireError(.invalidUUID, "\"uuid\" is not a UUID: \(quoted(s))", index: index)
        }
        return s
    }

    /// A new order from a Create's object. `created` defaults to `now` when absent.
    public static func newOrder(from o: JSONObject, index: Int?, now: OrderTimestamp) throws -> Order {
        let uuid = try uuid(of: o, index: index)
        var order = Order(uuid: uuid, customerName: "", created: now.truncatedToSeconds, version: 1)
        try apply(o, to: &order, uuid: uuid, index: index, isCreate: true)
        return order
    }

    /// Applies the members present in `o` to `order` (an Update keeps what it does not carry).
    /// `null` clears an optional field.
    public static func apply(_ o: JSONObject, to order: inout Order, uuid: String, index: Int?, isCreate: Bool) throws {
        func fail(_ m: String) -> WireError { WireError(.invalidField, m, uuid: uuid, index: index) }
        func text(_ name: String, _ v: JSONValue) throws -> String {
            guard let s = v.stringValue else { throw fail("\"\(name)\" must be a string, got \(v.typeName)") }
            if s.utf8.count > maxTextBytes {
                throw WireError(.tooLarge, "\"\(name)\" is longer than \(maxTextBytes) bytes", uuid: uuid, index: index)
            }
            return s
        }
        for (key, value) in o.members {
            switch key {
            case "uuid", "version":
                continue
            case "customerName":
                order.customerName = value == .null ? "" : try text(key, value)
            case "created":
                if value == .null {
                    if isCreate { continue }
                    throw fail("\"created\" cannot be removed")
                }
                let s = try text(key, value)
                guard let t = OrderTimestamp(parsing: s) else {
                    throw fail("\"created\" is not a date-time like 2016-01-12T21:35:16+0800 or RFC 3339: \(quoted(s))")
                }
                // The wire form has whole seconds only: keep what every replica can hold, so
                // lists sort the same on every terminal.
                order.created = t.truncatedToSeconds
            case "shippingMethod":
                order.shippingMethod = value == .null ? nil : try text(key, value)
            case "tableName":
                order.tableName = value == .null ? nil : try text(key, value)
            case "tableSize":
                if value == .null { order.tableSize = nil; continue }
                guard let n = value.intValue else {
                    throw fail(
                        "\"tableSize\" must be an integer, got \(value.typeName == "number" ? "\(value.serialized())" : value.typeName)")
                }
                guard n >= -1, n <= 100_000 else { throw fail("\"tableSize\" must be between -1 and 100000, got \(n)") }
                order.tableSize = n
            case "status":
                guard let s = value.stringValue, let next = OrderStatus(rawValue: s) else {
                    throw fail("\"status\" must be one of \(OrderStatus.names), got \(value.serialized())")
                }
                if !isCreate && !order.status.canMove(to: next) {
                    throw WireError(
                        .invalidTransition, "an order cannot go from \(order.status.rawValue) to \(next.rawValue)",
                        uuid: uuid, index: index)
                }
                order.status = next
            case "note":
                order.note = value == .null ? nil : try text(key, value)
            case "items":
                if value == .null { order.items = nil; continue }
                guard let list = value.arrayValue else { throw fail("\"items\" must be an array, got \(value.typeName)") }
                guard list.count <= maxItems else {
                    throw WireError(.tooLarge, "\"items\" has \(list.count) lines; at most \(maxItems)", uuid: uuid, index: index)
                }
                order.items = try list.enumerated().map { i, v in try lineItem(v, at: i, fail: fail, text: text) }
            default:
                if value == .null { order.extra[key] = nil } else { order.extra[key] = value }
            }
        }
    }

    static func lineItem(
        _ v: JSONValue, at i: Int, fail: (String) -> WireError,
        text: (String, JSONValue) throws -> String
    ) throws -> LineItem {
        guard let o = v.objectValue else { throw fail("items[\(i)] must be an object, got \(v.typeName)") }
        guard let nameValue = o["name"] else { throw fail("items[\(i)] has no \"name\"") }
        let name = try text("items[\(i)].name", nameValue)
        var sku: String?
        if let s = o["sku"], s != .null { sku = try text("items[\(i)].sku", s) }
        // An integral number is an integer whether written `2` or `2.0` (JSON Schema counts both).
        guard let q = o["quantity"]?.intValue, q >= 1, q <= 100_000 else {
            throw fail("items[\(i)].quantity must be an integer from 1 to 100000")
        }
        guard let p = o["unitPrice"]?.intValue, p >= 0, p <= 1_000_000_000_000 else {
            throw fail("items[\(i)].unitPrice must be a non-negative integer in minor units (cents), not a decimal")
        }
        return LineItem(sku: sku, name: name, quantity: q, unitPrice: p)
    }

    /// The `version` an Update or Remove says it was based on, if it carries one.
    public static func baseVersion(of o: JSONObject, uuid: String, index: Int?) throws -> Int64? {
        guard let v = o["version"], v != .null else { return nil }
        guard let n = v.intValue, n >= 1 else {
            throw WireError(
                .invalidField, "\"version\" must be the positive integer version the change is based on", uuid: uuid, index: index)
        }
        return n
    }

    /// An order as the master sends it (full object with `version`), read by a slave.
    public static func storedOrder(from o: JSONObject, index: Int?) throws -> Order {
        let uuid = try uuid(of: o, index: index)
        var order = Order(uuid: uuid, customerName: "", created: OrderTimestamp(epochMillis: 0), version: 1)
        try apply(o, to: &order, uuid: uuid, index: index, isCreate: true)
        guard case .string = o["created"] ?? .null else {
            throw WireError(.invalidField, "order from the master has no \"created\"", uuid: uuid, index: index)
        }
        if let v = o["version"] {
            guard let n = v.intValue, n >= 1 else {
                throw WireError(.invalidField, "\"version\" must be a positive integer", uuid: uuid, index: index)
            }
            order.version = n
        }
        return order
    }

    static func quoted(_ s: String) -> String {
        let cut = s.count > 60 ? String(s.prefix(60)) + "..." : s
        return JSONValue.string(cut).serialized()
    }
}
