/// The limits of one secure link.
public struct SecureLinkOptions: Sendable {
    /// The largest application message (reassembled from its chunks) accepted from the peer.
    public var maxMessageBytes: Int = 1 << 20
    /// The largest application message sealed for the peer; `nil`: `maxMessageBytes`. A master
    /// seals snapshot parts larger than what it accepts from a terminal (and a slave accepts
    /// them), so the two limits may differ.
    public var maxSealedMessageBytes: Int?
    /// The sender rekeys after every this many transport messages it sends (0: never).
    public var rekeyInterval: UInt64 = 10_000

    /// Options with the protocol's defaults unless given.
    public init(maxMessageBytes: Int = 1 << 20, maxSealedMessageBytes: Int? = nil, rekeyInterval: UInt64 = 10_000) {
        self.maxMessageBytes = maxMessageBytes
        self.maxSealedMessageBytes = maxSealedMessageBytes
        self.rekeyInterval = rekeyInterval
    }

    /// The limit `seal` applies.
    var sealLimit: Int { maxSealedMessageBytes ?? maxMessageBytes }
}
