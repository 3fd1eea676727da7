/// One journal entry as the roll-up ships it and hashes it: the fields a head office row keeps
/// (`ordersync.journal`), with the broadcast exactly as the local journal holds it.
public struct RollupEntry: Equatable, Sendable {
    /// The entry's sequence number in its lineage.
    public var seq: Int64
    /// The term of the master that applied it.
    public var term: Int64
    /// The operation id its origin sent, if any.
    public var opId: String?
    /// Who sent it (terminal, address or "local").
    public var origin: String
    /// The wire number of the operation: 0 create, 1 update, 2 remove.
    public var operation: Int
    /// The broadcast's JSON text, byte for byte.
    public var message: [UInt8]
    /// When it was applied, milliseconds since 1970.
    public var recordedAtMillis: Int64

    /// An entry from its fields.
    public init(
        seq: Int64, term: Int64, opId: String?, origin: String, operation: Int, message: [UInt8], recordedAtMillis: Int64
    ) {
        self.seq = seq
        self.term = term
        self.opId = opId
        self.origin = origin
        self.operation = operation
        self.message = message
        self.recordedAtMillis = recordedAtMillis
    }

    /// The bytes the entry's hash is taken over, version 1: the tag `OSRJ1`, then `seq` and
    /// `term` as 8-byte big-endian integers, `operation` as one byte, `opId` as one byte (0
    /// absent, 1 present) followed, when present, by its length-prefixed UTF-8, then `message`
    /// length-prefixed (4-byte big-endian lengths). Every field is framed, so no two different
    /// entries share their bytes. `origin` and `recordedAtMillis` are left out: each copy of the
    /// journal notes them its own way (a standby records when it applied the entry), while the
    /// fields hashed are the same in the master's journal and in every standby's copy.
    public var canonicalBytes: [UInt8] {
        var out: [UInt8] = Array("OSRJ1".utf8)
        out.reserveCapacity(32 + message.count + (opId?.utf8.count ?? 0))
        Self.append(seq, to: &out)
        Self.append(term, to: &out)
        out.append(UInt8(truncatingIfNeeded: operation))
        if let opId {
            out.append(1)
            Self.appendFramed(Array(opId.utf8), to: &out)
        } else {
            out.append(0)
        }
        Self.appendFramed(message, to: &out)
        return out
    }

    /// The entry's size for batch planning: its message and text fields.
    public var byteCount: Int { message.count + origin.utf8.count + (opId?.utf8.count ?? 0) + 32 }

    private static func append(_ value: Int64, to out: inout [UInt8]) {
        let v = UInt64(bitPattern: value)
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: v >> UInt64(shift))) }
    }

    private static func appendFramed(_ bytes: [UInt8], to out: inout [UInt8]) {
        let n = UInt32(truncatingIfNeeded: bytes.count)
        for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: n >> UInt32(shift))) }
        out.append(contentsOf: bytes)
    }
}
