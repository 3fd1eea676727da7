/// Which side of a handshake this party plays: the initiator writes the first message.
public enum NoiseRole: String, Equatable, Sendable {
    /// Sends handshake messages 0, 2, 4...
    case initiator
    /// Sends handshake messages 1, 3, 5...
    case responder
}
