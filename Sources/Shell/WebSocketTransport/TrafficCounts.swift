/// What one connection carried, counted on its loop in plain integers (no lock, no atomic):
/// data messages and frame bytes, each way. The opening handshake is not counted.
public struct TrafficCounts: Equatable, Sendable {
    /// Frame bytes received after the opening handshake.
    public var bytesIn = 0
    /// Frame bytes sent (data, control and close frames).
    public var bytesOut = 0
    /// Text and binary messages received.
    public var messagesIn = 0
    /// Text and binary messages sent.
    public var messagesOut = 0

    public init() {}

    /// `messages` messages (one unless said) of `bytes` frame bytes in all sent.
    mutating func sent(_ bytes: Int, messages: Int = 1) {
        bytesOut += bytes
        messagesOut += messages
    }

    /// Adds what another connection carried.
    public mutating func add(_ other: TrafficCounts) {
        bytesIn += other.bytesIn
        bytesOut += other.bytesOut
        messagesIn += other.messagesIn
        messagesOut += other.messagesOut
    }
}
