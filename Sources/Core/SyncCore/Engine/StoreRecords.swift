/// One local change of a slave waiting for its master's answer.
public struct OutboxEntry: Equatable, Sendable {
    /// Order of the change on this terminal (increasing).
    public var position: Int64
    /// The operation id sent with it; the master answers a repeat without applying it again.
    public var opId: String
    /// The operation message as it is sent: the UTF-8 bytes of its JSON text.
    public var message: [UInt8]
    /// Lower-case UUIDs of the orders it touches.
    public var orderKeys: [String]
    /// When it was made (wall clock, milliseconds), for operators.
    public var createdMillis: Int64
    /// The replica's last applied sequence when it was made. The master numbers the operation
    /// above it, so while the entry waits the slave acknowledges no more than this: the master
    /// keeps the journal entry (and tombstones) that let it recognise a repeat.
    public var baseSeq: Int64

    /// An entry from its fields.
    public init(position: Int64 = 0, opId: String, message: [UInt8], orderKeys: [String], createdMillis: Int64, baseSeq: Int64 = 0) {
        self.position = position
        self.opId = opId
        self.message = message
        self.orderKeys = orderKeys
        self.createdMillis = createdMillis
        self.baseSeq = baseSeq
    }
}

/// A slave the master knows: its last acknowledged sequence and when it was last heard from.
public struct KnownTerminal: Equatable, Sendable {
    /// Stable id the slave keeps in its data directory.
    public var id: String
    /// Its display name.
    public var name: String
    /// Its last address (ip:port).
    public var address: String
    /// The last sequence it said it applied.
    public var ackedSeq: Int64
    /// Wall-clock time it was last heard from, milliseconds since 1970.
    public var lastSeenMillis: Int64
    /// The changes its outbox held when it last said (hello, ack); nil if it never said.
    public var outbox: Int?

    /// A terminal from its fields.
    public init(id: String, name: String, address: String, ackedSeq: Int64, lastSeenMillis: Int64, outbox: Int? = nil) {
        self.id = id
        self.name = name
        self.address = address
        self.ackedSeq = ackedSeq
        self.lastSeenMillis = lastSeenMillis
        self.outbox = outbox
    }
}

/// The master's answer to one of a slave's own operations, kept after its outbox entry left so
/// a retry of the same operation id through the local API gets that answer again instead of
/// being applied a second time.
public struct AnsweredOperation: Equatable, Sendable {
    public var opId: String
    /// The journal sequence it was applied at (nil when nothing was applied).
    public var seq: Int64?
    /// The orders as the master applied them.
    public var applied: [Order]
    /// The master's refusals.
    public var errors: [WireError]
    /// When the answer arrived (wall clock, milliseconds), for operators.
    public var answeredMillis: Int64

    public init(opId: String, seq: Int64?, applied: [Order], errors: [WireError], answeredMillis: Int64) {
        self.opId = opId
        self.seq = seq
        self.applied = applied
        self.errors = errors
        self.answeredMillis = answeredMillis
    }
}

/// A terminal whose secure link proved it holds the key of a paired terminal: its node id and
/// the name the master paired it under. The journal names it, never what its hello says.
public struct AuthenticatedTerminal: Equatable, Sendable {
    /// The node id of its static key (`ABCD-EFGH-...`).
    public var nodeId: String
    /// Its paired name.
    public var name: String

    /// A terminal from its node id and paired name.
    public init(nodeId: String, name: String) {
        self.nodeId = nodeId
        self.name = name
    }

    /// How journal origins and logs name it: the paired name and the first two groups of its
    /// node id, `till-2 [ABCD-EFGH]`.
    public var label: String {
        let short = nodeId.split(separator: "-").prefix(2).joined(separator: "-")
        return "\(name) [\(short)]"
    }
}
