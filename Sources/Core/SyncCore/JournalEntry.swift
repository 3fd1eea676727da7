/// The three StorePOS operations; the raw values are the wire numbers.
public enum OperationKind: Int, Sendable, CaseIterable, CustomStringConvertible {
    case create = 0
    case update = 1
    case remove = 2

    /// Lower-case name for logs and the journal: "create", "update", "remove".
    public var description: String {
        switch self {
        case .create: return "create"
        case .update: return "update"
        case .remove: return "remove"
        }
    }
}

/// One applied operation in the master's journal (or a standby's copy of it), numbered by `seq`
/// in the same transaction as the change it records.
public struct JournalEntry: Equatable, Sendable {
    /// Sequence number: 1, 2, 3, ... without gaps, assigned by the master.
    public var seq: Int64
    /// The term of the master that applied it (`Docs/PROTOCOL.md` 7): 1 for every entry made
    /// before terms existed.
    public var term: Int64
    /// The operation id chosen by its origin, if it sent one; a repeat with the same id is
    /// answered from the journal instead of being applied again.
    public var opId: String?
    /// Who sent it: a terminal id, a peer address, or "local" for the node's own API.
    public var origin: String
    /// What was done.
    public var operation: OperationKind
    /// The UUIDs of the orders it changed, in message order.
    public var orderUUIDs: [String]
    /// The broadcast message exactly as it was sent: the UTF-8 bytes of its JSON text, sent again
    /// as they are.
    public var message: [UInt8]
    /// Wall-clock time it was applied, in milliseconds since 1970, for operators only; never
    /// used to order anything.
    public var recordedAtMillis: Int64

    /// A journal entry from its fields.
    public init(
        seq: Int64, term: Int64 = 1, opId: String?, origin: String, operation: OperationKind, orderUUIDs: [String],
        message: [UInt8], recordedAtMillis: Int64
    ) {
        self.seq = seq
        self.term = term
        self.opId = opId
        self.origin = origin
        self.operation = operation
        self.orderUUIDs = orderUUIDs
        self.message = message
        self.recordedAtMillis = recordedAtMillis
    }
}
