import JSON

/// Where an order is in its life.
///
/// `open` -> `in_progress` -> `completed`, and `open`/`in_progress` -> `cancelled`.
/// `completed` and `cancelled` are final: a final order does not change any more, and a
/// completed order cannot be removed.
public enum OrderStatus: String, Sendable, CaseIterable {
    case open
    case inProgress = "in_progress"
    case completed
    case cancelled

    /// True for `completed` and `cancelled`.
    public var isFinal: Bool { self == .completed || self == .cancelled }

    /// Whether an order may move from this status to `next` (staying is always allowed).
    public func canMove(to next: OrderStatus) -> Bool {
        if next == self { return true }
        switch (self, next) {
        case (.open, .inProgress), (.open, .cancelled), (.inProgress, .completed), (.inProgress, .cancelled),
            (.open, .completed):
            return true
        default:
            return false
        }
    }

    /// The accepted names, for error messages.
    public static var names: String { allCases.map(\.rawValue).joined(separator: ", ") }
}

/// One line of an order: what, how many, at which unit price (integer minor units, e.g. cents).
public struct LineItem: Equatable, Sendable {
    /// Stock-keeping unit, if the POS has one.
    public var sku: String?
    /// What it is.
    public var name: String
    /// How many, at least 1.
    public var quantity: Int64
    /// Price of one, in minor units (cents); never floating point.
    public var unitPrice: Int64

    /// A line from its fields.
    public init(sku: String? = nil, name: String, quantity: Int64, unitPrice: Int64) {
        self.sku = sku
        self.name = name
        self.quantity = quantity
        self.unitPrice = unitPrice
    }

    /// The line as a JSON object.
    public var json: JSONObject {
        var o = JSONObject()
        if let s = sku { o["sku"] = .string(s) }
        o["name"] = .string(name)
        o["quantity"] = .int(quantity)
        o["unitPrice"] = .int(unitPrice)
        return o
    }
}
