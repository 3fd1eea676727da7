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
    /// The message or a field is larger than allowed.
    case tooLarge = "too_large"
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

    /// An error from its fields.
    public init(_ code: WireErrorCode, _ message: String, uuid: String? = nil, index: Int? = nil) {
        self.code = code
        self.message = message
        self.uuid = uuid
        self.index = index
    }

    public var description: String {
        var s = "\(code.rawValue): \(message)"
        if let u = uuid { s += " (order \(u))" }
        return s
    }
}
