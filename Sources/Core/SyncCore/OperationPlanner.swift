import JSON

/// One change to the order table that an applied operation makes.
public enum OrderChange: Equatable, Sendable {
    case insert(Order)
    case update(Order)
    case delete(Order)

    /// The order as it is after the change (for a delete: as it was).
    public var order: Order {
        switch self {
        case .insert(let o), .update(let o), .delete(let o): return o
        }
    }
}

/// What the master will do with one operation message: the changes to store in one transaction
/// and broadcast, the harmless repeats, and the rejected orders.
public struct OperationPlan: Equatable, Sendable {
    /// Changes to apply, in message order.
    public var changes: [OrderChange] = []
    /// Creates that repeat exactly what is stored: answered as success, nothing applied.
    public var unchanged: [Order] = []
    /// Rejected orders, each with the reason.
    public var errors: [WireError] = []

    /// An empty plan.
    public init() {}
}

/// Decides what an operation message does, given read access to the current orders. Pure: the
/// caller reads the store through `lookup` and applies the plan in one transaction.
///
/// Rules: a Create of a new UUID inserts (version 1); a Create of an existing UUID is a harmless
/// repeat when identical to what is stored, else `already_exists`. An Update changes only the
/// fields it carries and bumps `version`; a Remove needs only `uuid`. Update or Remove of an
/// unknown order is `not_found`. Every problem rejects only the order it concerns.
public enum OperationPlanner {
    /// Most orders accepted in one message.
    public static let maxOrdersPerMessage = 1000
    /// Largest order accepted, with its unknown members, measured as its encoded JSON (UTF-8
    /// bytes): what a terminal sends, and what an order becomes after the change.
    public static let maxOrderBytes = 16 * 1024

    /// The refusal for an order whose JSON is over `maxOrderBytes`; nil when it fits.
    static func oversized(_ value: JSONValue, uuid: String, index: Int, after change: Bool) -> WireError? {
        oversized(bytes: value.serializedByteCount, uuid: uuid, index: index, after: change)
    }

    /// The refusal for an order whose JSON is `size` bytes, when that is over `maxOrderBytes`.
    static func oversized(bytes size: Int, uuid: String, index: Int, after change: Bool) -> WireError? {
        guard size > maxOrderBytes else { return nil }
        let what = change ? "with this change the order would encode to" : "the order encodes to"
        return WireError(
            .orderTooLarge, "\(what) \(size) bytes of JSON; at most \(maxOrderBytes) are accepted, unknown members included",
            uuid: uuid, index: index)
    }

    /// The refusal for an Update or Remove that carries a `version` other than the current one
    /// (or a malformed one); nil when it may go ahead.
    static func staleVersion(_ obj: JSONObject, _ order: Order, _ index: Int) -> WireError? {
        do {
            guard let base = try OrderFields.baseVersion(of: obj, uuid: order.uuid, index: index), base != order.version else {
                return nil
            }
            return WireError(
                .conflict, "the order changed since version \(base); it is at version \(order.version) now",
                uuid: order.uuid, index: index, current: order)
        } catch let e as WireError {
            return e
        } catch {
            return WireError(.invalidField, "\"version\" is not readable", uuid: order.uuid, index: index)
        }
    }

    /// Plans `message` for a store without tombstones.
    public static func plan(
        _ message: OperationMessage, now: OrderTimestamp,
        lookup: (String) throws -> Order?
    ) rethrows -> OperationPlan {
        try plan(message, now: now, lookup: lookup, wasRemoved: { _ in false })
    }

    /// Plans `message`. `lookup` returns the stored order for a UUID (case-insensitive) or nil;
    /// `wasRemoved` tells whether a UUID with no stored order was removed before (a tombstone).
    public static func plan(
        _ message: OperationMessage, now: OrderTimestamp,
        lookup: (String) throws -> Order?,
        wasRemoved: (String) throws -> Bool
    ) rethrows -> OperationPlan {
        var plan = OperationPlan()
        if message.orders.count > maxOrdersPerMessage {
            plan.errors.append(
                WireError(
                    .tooLarge, "message has \(message.orders.count) orders; at most \(maxOrdersPerMessage) are accepted in one message"))
            return plan
        }
        // Orders changed earlier in this same message, by key; nil value = removed.
        var overlay: [String: Order?] = [:]
        func current(_ uuid: String) throws -> Order? {
            if let o = overlay[uuid.lowercased()] { return o }
            return try lookup(uuid)
        }
        for (index, raw) in message.orders.enumerated() {
            guard let obj = raw.objectValue else {
                plan.errors.append(WireError(.invalidMessage, "order \(index) must be an object, got \(raw.typeName)", index: index))
                continue
            }
            let uuid: String
            do { uuid = try OrderFields.uuid(of: obj, index: index) } catch let e as WireError {
                plan.errors.append(e)
                continue
            } catch { continue }
            if let e = oversized(raw, uuid: uuid, index: index, after: false) {
                plan.errors.append(e)
                continue
            }
            let existing: Order?
            do { existing = try current(uuid) } catch let e as WireError { plan.errors.append(e); continue }
            switch message.operation {
            case .create:
                let order: Order
                do { order = try OrderFields.newOrder(from: obj, index: index, now: now) } catch let e as WireError {
                    plan.errors.append(e)
                    continue
                } catch { continue }
                if let old = existing {
                    var candidate = order
                    if obj["created"] == nil { candidate.created = old.created }
                    if candidate.sameContent(as: old) {
                        plan.unchanged.append(old)
                    } else {
                        plan.errors.append(
                            WireError(
                                .alreadyExists,
                                "an order with this uuid already exists with different content; use Update (operation 1) to change it",
                                uuid: uuid, index: index))
                    }
                    continue
                }
                if let e = oversized(bytes: order.jsonBytes.count, uuid: uuid, index: index, after: true) {
                    plan.errors.append(e)
                    continue
                }
                if overlay[order.key] == nil, try wasRemoved(uuid) {
                    plan.errors.append(
                        WireError(
                            .removed, "this order was removed; a removed order cannot be created again (use a new uuid)", uuid: uuid,
                            index: index))
                    continue
                }
                overlay[order.key] = .some(order)
                plan.changes.append(.insert(order))
            case .update:
                guard var order = existing else {
                    plan.errors.append(WireError(.notFound, "no order with this uuid to update", uuid: uuid, index: index))
                    continue
                }
                if let e = staleVersion(obj, order, index) {
                    plan.errors.append(e)
                    continue
                }
                let before = order
                do { try OrderFields.apply(obj, to: &order, uuid: order.uuid, index: index, isCreate: false) } catch let e as WireError {
                    plan.errors.append(e)
                    continue
                } catch { continue }
                if order == before {
                    plan.unchanged.append(order)
                    continue
                }
                if before.status.isFinal {
                    plan.errors.append(
                        WireError(
                            .invalidTransition,
                            "the order is \(before.status.rawValue); a \(before.status.rawValue) order does not change any more",
                            uuid: order.uuid, index: index))
                    continue
                }
                order.version = before.version + 1
                if let e = oversized(bytes: order.jsonBytes.count, uuid: order.uuid, index: index, after: true) {
                    plan.errors.append(e)
                    continue
                }
                overlay[order.key] = .some(order)
                plan.changes.append(.update(order))
            case .remove:
                guard let order = existing else {
                    plan.errors.append(WireError(.notFound, "no order with this uuid to remove", uuid: uuid, index: index))
                    continue
                }
                if let e = staleVersion(obj, order, index) {
                    plan.errors.append(e)
                    continue
                }
                if order.status == .completed {
                    plan.errors.append(WireError(.invalidTransition, "a completed order cannot be removed", uuid: order.uuid, index: index))
                    continue
                }
                overlay[order.key] = .some(nil)
                plan.changes.append(.delete(order))
            }
        }
        return plan
    }
}
