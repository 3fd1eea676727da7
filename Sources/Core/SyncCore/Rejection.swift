/// A refused operation or order, recorded by the master so an operator can list them.
public struct Rejection: Equatable, Sendable {
    /// Increasing id (not a journal sequence: nothing was applied).
    public var id: Int64
    /// Wall-clock time, milliseconds since 1970, for operators only.
    public var recordedAtMillis: Int64
    /// Who sent it: terminal name@address, a peer address, or "NAME (local API)".
    public var origin: String
    /// The operation id, when the sender gave one.
    public var opId: String?
    /// The operation, when the message got that far.
    public var operation: OperationKind?
    /// The order concerned, when there is one.
    public var orderUUID: String?
    /// Why.
    public var code: WireErrorCode
    /// The message sent back.
    public var message: String

    /// A rejection from its fields.
    public init(
        id: Int64 = 0, recordedAtMillis: Int64, origin: String, opId: String?, operation: OperationKind?,
        orderUUID: String?, code: WireErrorCode, message: String
    ) {
        self.id = id
        self.recordedAtMillis = recordedAtMillis
        self.origin = origin
        self.opId = opId
        self.operation = operation
        self.orderUUID = orderUUID
        self.code = code
        self.message = message
    }
}
