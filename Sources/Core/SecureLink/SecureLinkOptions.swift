/// The limits of one secure link.
public struct SecureLinkOptions: Sendable {
    /// The largest application message (reassembled from its chunks) accepted or sealed.
    public var maxMessageBytes: Int = 1 << 20
    /// The sender rekeys after every this many transport messages it sends (0: never).
    public var rekeyInterval: UInt64 = 10_000

    /// Options with the protocol's defaults unless given.
    public init(maxMessageBytes: Int = 1 << 20, rekeyInterval: UInt64 = 10_000) {
        self.maxMessageBytes = maxMessageBytes
        self.rekeyInterval = rekeyInterval
    }
}
