import JSON

/// Orders a plain StorePOS app holds that the store does not have (`ForeignOrder`): an iPad
/// that was a StorePOS terminal or master keeps its old orders, and the app never sends its
/// list, so the master learns of one only when the app's staff change or remove it (an Update
/// or Remove refused as `not_found`). Each is recorded for operators
/// (`ordersync storepos foreign`) and logged once (`storepos.foreign_order`).
extension MasterEngine {
    /// Records the order a StorePOS terminal's refused Update or Remove named, when the store
    /// does not have it and never removed it (`not_found`).
    func noteForeignOrder(_ e: WireError, of message: OperationMessage, from peer: Int, now: Int64, _ out: inout [Action]) {
        guard e.code == .notFound, message.operation != .create, let p = peers[peer], !p.speaksOrderSync,
            let master = e.uuid, let sent = Self.sentSpelling(of: master, index: e.index, in: message)
        else { return }
        let atIndex = e.index.flatMap { message.orders.indices.contains($0) ? message.orders[$0] : nil }
        let raw = atIndex ?? message.orders.first(where: { $0.objectValue?["uuid"]?.stringValue == sent })
        guard let content = raw?.serialized() else { return }
        do {
            // Removed here (a change racing the Remove): not an order the store never had.
            guard try !store.hasTombstone(uuid: sent) else { return }
            let first = try store.noteForeignOrder(
                ForeignOrder(uuid: sent, address: p.address, content: content, firstSeenMillis: now, lastSeenMillis: now))
            guard first else { return }
            out.append(
                .log(
                    EngineLog(
                        .info, "storepos.foreign_order",
                        [("peer.address", p.address), ("order.uuid", sent), ("refused", "\(message.operation)")])))
        } catch {
            out.append(.log(EngineLog(.error, "storepos.foreign_record_failed", [("order.uuid", sent), ("error", "\(error)")])))
        }
    }
}

/// What adopting or clearing foreign orders did.
public struct ForeignOrdersOutcome: Sendable {
    /// The foreign orders acted on (adopted: those the store took in).
    public var records: [ForeignOrder] = []
    /// The uuids asked for that are not recorded, or not waiting (already adopted or cleared).
    public var unknown: [String] = []
    /// For an adoption: what applying the Create did.
    public var applied: ApplyOutcome?

    /// An outcome with nothing done yet.
    public init() {}
}

extension MasterEngine {
    /// The close code a StorePOS app gets when it must take the store afresh (RFC 6455 7.4.1:
    /// "1000 indicates a normal closure").
    public static let normalClosure: UInt16 = 1000

    /// The recorded foreign orders still waiting (`seen`) among `uuids` (any case; nil: all),
    /// and the uuids asked for that are not waiting.
    private func waitingForeignOrders(_ uuids: [String]?) throws -> (waiting: [ForeignOrder], unknown: [String]) {
        let waiting = try store.foreignOrders().filter { $0.state == .seen }
        guard let uuids else { return (waiting, []) }
        let asked = Set(uuids.map { $0.lowercased() })
        let known = Set(waiting.map { $0.uuid.lowercased() })
        return (waiting.filter { asked.contains($0.uuid.lowercased()) }, uuids.filter { !known.contains($0.lowercased()) })
    }

    /// The Create that brings a foreign order into the store: the app's copy (uuid as the app
    /// wrote it, customerName, created, shippingMethod, tableName, tableSize), status open.
    static func adoption(of record: ForeignOrder) -> JSONValue {
        let sent = (try? JSONParser.parse(Array(record.content.utf8)).objectValue) ?? JSONObject()
        var order = JSONObject([("uuid", .string(record.uuid))])
        for key in ["customerName", "created", "shippingMethod", "tableName", "tableSize"] {
            if let value = sent[key], value != .null { order[key] = value }
        }
        return .object(order)
    }

    /// Brings the waiting foreign orders `uuids` (nil: all) into the store as one journaled
    /// Create from `origin`. Every OrderSync terminal gets it; StorePOS apps do not (their Realm
    /// may hold the uuid, and a Create of it would crash the app): their links are closed, so
    /// that they reconnect once the service is announced again and take the store afresh.
    public func adoptForeignOrders(_ uuids: [String]?, origin: String, opId: String?, now: Int64) -> (ForeignOrdersOutcome, [Action]) {
        var result = ForeignOrdersOutcome()
        var out: [Action] = []
        let waiting: [ForeignOrder]
        do {
            (waiting, result.unknown) = try waitingForeignOrders(uuids)
        } catch {
            var failed = ApplyOutcome(operation: .create)
            failed.errors = [WireError(.storageFailed, "could not read the foreign orders: \(error)")]
            result.applied = failed
            return (result, out)
        }
        guard !waiting.isEmpty else { return (result, out) }
        let message = OperationMessage(operation: .create, orders: waiting.map(Self.adoption), opId: opId)
        withholdsFromStorePOS = true
        let outcome = apply(message, origin: origin, now: now)
        deliver(outcome, message: message, origin: origin, sender: nil, now: now, &out)
        withholdsFromStorePOS = false
        result.applied = outcome
        let taken = Set((outcome.applied + outcome.unchanged).map(\.key))
        result.records = waiting.filter { taken.contains($0.uuid.lowercased()) }
        guard !result.records.isEmpty else { return (result, route(out)) }
        do {
            try store.setForeignOrders(result.records.map(\.uuid), state: .adopted)
        } catch {
            out.append(.log(EngineLog(.error, "storepos.foreign_record_failed", [("error", "\(error)")])))
        }
        let apps = peers.values.filter { !$0.speaksOrderSync && $0.phase != .closing }.map(\.id).sorted()
        out.append(.log(EngineLog(.info, "storepos.adopted", [("orders", "\(result.records.count)"), ("apps_closed", "\(apps.count)")])))
        for id in apps {
            peers[id]?.phase = .closing
            out.append(.close(peer: id, code: Self.normalClosure, reason: "the store took in orders: reconnect for a fresh copy"))
        }
        return (result, route(out))
    }

    /// Clears the waiting foreign orders `uuids` (nil: all) from the StorePOS apps: every
    /// StorePOS terminal gets a Remove of each, one uuid per message, spelled as the app wrote
    /// it; they are marked cleared, and apps that connect later get the same Removes in their
    /// connect sequence (`MasterStore.clearedForeignUUIDs()`).
    public func clearForeignOrders(_ uuids: [String]?) -> (ForeignOrdersOutcome, [Action]) {
        var result = ForeignOrdersOutcome()
        var out: [Action] = []
        do {
            let waiting: [ForeignOrder]
            (waiting, result.unknown) = try waitingForeignOrders(uuids)
            guard !waiting.isEmpty else { return (result, out) }
            try store.setForeignOrders(waiting.map(\.uuid), state: .cleared)
            result.records = waiting
        } catch {
            out.append(.log(EngineLog(.error, "storepos.foreign_record_failed", [("error", "\(error)")])))
            return (result, out)
        }
        let apps = peers.values.filter { !$0.speaksOrderSync && $0.phase != .closing && $0.phase != .awaitingHello }
            .map(\.id).sorted()
        for record in result.records {
            let text = OperationMessage(operation: .remove, orders: [.object(JSONObject([("uuid", .string(record.uuid))]))]).encodedBytes()
            if !apps.isEmpty { out.append(.broadcast(bytes: text, peers: apps)) }
        }
        out.append(.log(EngineLog(.info, "storepos.cleared", [("orders", "\(result.records.count)"), ("apps", "\(apps.count)")])))
        return (result, route(out))
    }
}
