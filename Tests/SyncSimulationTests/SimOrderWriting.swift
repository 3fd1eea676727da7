import JSON

@testable import SyncCore

/// The texts the POS apps write.
enum SimOrderText {
    static let names = ["Kevin", "Ana", "Mehmet", "Li Wei", "Zoë", "O'Brien", "Table party", ""]
    static let notes = ["no nuts", "extra hot", "birthday 🎂", "<b>bold</b>", "'; DROP TABLE orders; --"]
}

/// A simulation whose POS apps write orders: random Create/Update/Remove messages, including
/// multi-order messages, status changes, updates based on the version the terminal sees (so
/// conflicts happen) and invalid orders, drawn from the simulation's generator.
protocol SimOrderWriting: AnyObject {
    /// The run's generator.
    var rng: SimRandom { get }
    /// Order keys created so far (any node), oldest first; updates and removes pick recent ones.
    var createdKeys: [String] { get set }
}

extension Simulation: SimOrderWriting {}

extension SimOrderWriting {
    /// A random operation message; `lookup` reads the writer's replica (for `version`).
    func makeMessage(lookup: (String) -> Order?) -> OperationMessage {
        let r = rng.unit()
        if createdKeys.isEmpty || r < 0.45 {
            var orders: [JSONValue] = [.object(newOrder())]
            if rng.chance(0.15) {
                for _ in 0..<rng.int(1...2) { orders.append(.object(newOrder())) }
            }
            if rng.chance(0.03) {
                orders.insert(
                    .object(JSONObject([("uuid", .string("not-a-uuid")), ("customerName", .string("x"))])),
                    at: rng.below(orders.count + 1))
            }
            return OperationMessage(operation: .create, orders: orders)
        }
        let recentKeys = Array(createdKeys.suffix(25))
        let key = rng.pick(recentKeys)
        let operation: OperationKind = r < 0.85 ? .update : .remove
        var orders: [JSONValue] = [.object(change(operation, key, lookup(key)))]
        // Sometimes a second order in the same message: one may be refused and the other applied.
        if rng.chance(0.1), let other = recentKeys.first(where: { $0 != key && rng.chance(0.3) }) {
            orders.append(.object(change(operation, other, lookup(other))))
        }
        return OperationMessage(operation: operation, orders: orders)
    }

    /// The object of one order in an Update or Remove.
    private func change(_ operation: OperationKind, _ key: String, _ local: Order?) -> JSONObject {
        let uuid = rng.chance(0.2) ? key.uppercased() : key
        var o = JSONObject([("uuid", .string(uuid))])
        if operation == .update {
            var any = false
            if rng.chance(0.4) { o["customerName"] = .string(rng.pick(SimOrderText.names)); any = true }
            if rng.chance(0.3) { o["tableName"] = rng.chance(0.1) ? .null : .string("T\(rng.int(1...20))"); any = true }
            if rng.chance(0.3) { o["note"] = rng.chance(0.15) ? .null : .string(rng.pick(SimOrderText.notes)); any = true }
            if rng.chance(0.2) { o["tableSize"] = .int(rng.int(Int64(-1)...12)); any = true }
            if rng.chance(0.25) {
                o["status"] = .string(rng.pick(["in_progress", "in_progress", "completed", "cancelled", "open"]))
                any = true
            }
            if rng.chance(0.1) { o["items"] = items(); any = true }
            if rng.chance(0.05) { o["loyalty"] = rng.chance(0.3) ? .null : .string(rng.pick(["gold", "silver"])); any = true }
            if !any { o["customerName"] = .string(rng.pick(SimOrderText.names)) }
            addVersion(&o, local, 0.3)
            return o
        }
        addVersion(&o, local, 0.2)
        return o
    }

    private func addVersion(_ o: inout JSONObject, _ local: Order?, _ p: Double) {
        guard let cur = local, rng.chance(p) else { return }
        o["version"] = .int(rng.chance(0.15) && cur.version > 1 ? cur.version - 1 : cur.version)
    }

    private func newOrder() -> JSONObject {
        let key = rng.uuid()
        createdKeys.append(key)
        var o = JSONObject([
            ("uuid", .string(rng.chance(0.1) ? key.uppercased() : key)),
            ("customerName", .string(rng.pick(SimOrderText.names))),
        ])
        if rng.chance(0.5) {
            let offset = rng.pick(["+0800", "+0200", "+0000", "-0500", "+0530"])
            o["created"] = .string(
                "2025-06-\(10 + rng.int(0...19))T\(10 + rng.int(0...13)):\(10 + rng.int(0...49)):\(10 + rng.int(0...49))\(offset)")
        }
        if rng.chance(0.2) { o["shippingMethod"] = .string(rng.pick(["DHL", "pickup"])) }
        if rng.chance(0.5) { o["tableName"] = .string("T\(rng.int(1...20))") }
        if rng.chance(0.5) { o["tableSize"] = .int(rng.int(Int64(-1)...12)) }
        if rng.chance(0.3) { o["note"] = .string(rng.pick(SimOrderText.notes)) }
        if rng.chance(0.25) { o["items"] = items() }
        if rng.chance(0.1) { o["loyalty"] = .object(JSONObject([("tier", .string("gold")), ("points", .int(rng.int(Int64(0)...500)))])) }
        if rng.chance(0.1) { o["status"] = .string(rng.pick(["open", "in_progress"])) }
        return o
    }

    private func items() -> JSONValue {
        .array(
            (0..<rng.int(1...3)).map { _ in
                var line = JSONObject()
                if rng.chance(0.5) { line["sku"] = .string(rng.pick(["LAT", "ESP", "CRO"])) }
                line["name"] = .string(rng.pick(["Latte", "Espresso", "Croissant"]))
                line["quantity"] = .int(rng.int(Int64(1)...4))
                line["unitPrice"] = .int(rng.int(Int64(100)...900))
                return .object(line)
            })
    }
}
