/// Error codes sent back to a terminal whose message (or one order in it) was rejected.
public enum WireErrorCode: String, Sendable, CaseIterable {
    /// The text is not JSON.
    case malformedJSON = "malformed_json"
    /// JSON, but not a message of this protocol (not an object, `orders` missing, ...).
    case invalidMessage = "invalid_message"
    /// `operation` is not 0, 1 or 2.
    case unknownOperation = "unknown_operation"
    /// `uuid` missing or not a UUID.
    case invalidUUID = "invalid_uuid"
    /// A field has the wrong type or an unacceptable value.
    case invalidField = "invalid_field"
    /// Update or Remove of an order that does not exist.
    case notFound = "not_found"
    /// Create of a UUID that exists with different content.
    case alreadyExists = "already_exists"
    /// Create of a UUID that was removed: a removed order never comes back (its tombstone is in
    /// the master's journal), so a late or replayed Create cannot resurrect it.
    case removed = "removed"
    /// A status change the lifecycle does not allow, a change to a completed or cancelled
    /// order, or the removal of a completed order.
    case invalidTransition = "invalid_transition"
    /// An Update or Remove based on a `version` that is not the current one; the error carries
    /// the current order.
    case conflict = "conflict"
    /// The message or a field is larger than allowed (more than 1000 orders, a text field over
    /// 4096 bytes, an object with more than 256 members).
    case tooLarge = "too_large"
    /// One order, with its unknown members, encodes to more than 16 KiB of JSON; nothing is
    /// applied for it.
    case orderTooLarge = "order_too_large"
    /// The terminal sent more operations than its rate limit allows; nothing was applied. The
    /// error's `retryAfterMillis` says when to send it again.
    case rateLimited = "rate_limited"
    /// The master could not store the change (disk full, I/O error); nothing was applied.
    case storageFailed = "storage_failed"
    /// The store of the sender is not this master's store.
    case wrongStore = "wrong_store"
}

/// A rejection: what was wrong, and which order (UUID and position) when there is one.
public struct WireError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Machine-readable code.
    public var code: WireErrorCode
    /// Human-readable explanation naming the problem.
    public var message: String
    /// The order's UUID, when the problem concerns one order and it has a readable UUID.
    public var uuid: String?
    /// Zero-based position of the order in the message's `orders` array, when relevant.
    public var index: Int?
    /// For `conflict`: the order as the master has it now.
    public var current: Order?
    /// For `rate_limited`: milliseconds to wait before sending the operation again.
    public var retryAfterMillis: Int64?

    /// An error from its fields.
    public init(_ code: WireErrorCode, _ message: String, uuid: String? = nil, index: Int? = nil, current: Order? = nil) {
        self.code = code
        self.message = message
        self.uuid = uuid
        self.index = index
        self.current = current
    }

    public var description: String {
        var s = "\(code.rawValue): \(message)"
        if let u = uuid { s += " (order \(u))" }
        return s
    }
}

extension WireError {
    /// How loud a refusal with this error is logged: a client's mistake (validation, conflict,
    /// not found, a malformed message, a rate limit) is a `notice`; the node's own failure to
    /// store (`storage_failed`) a `warning`.
    public var logLevel: EngineLog.Level {
        code == .storageFailed ? .warning : .notice
    }
}
