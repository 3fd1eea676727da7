/// What connections that have not authenticated yet may hold together on the master: each is
/// charged what it may buffer (the HTTP upgrade head, one handshake-sized message and the
/// connection's own state), their number is capped so that the charges stay within
/// `memoryBytes` whatever the number of source addresses, and they never take the last
/// `reservedForAuthenticated` slots of the master's `maxConnections`.
///
/// When the pre-authentication slots are full, the oldest unauthenticated connection gives its
/// slot to the new one: a paired terminal's handshake takes milliseconds, so it completes long
/// before idle attackers holding slots push it out, and it always finds a slot. Pure: the caller
/// counts the connections.
public struct PreAuthenticationBudget: Equatable, Sendable {
    /// The state of a connection besides its buffers (socket, channel and session objects,
    /// the secure link's handshake state), charged to each unauthenticated connection.
    public static let connectionOverheadBytes = 7 << 10

    /// The most memory all unauthenticated connections may hold together.
    public var memoryBytes: Int
    /// What one unauthenticated connection may hold: its upgrade head, one handshake message
    /// and ``connectionOverheadBytes``.
    public var bytesPerConnection: Int
    /// The most connections the master serves at once (authenticated or not).
    public var maxConnections: Int
    /// Slots of `maxConnections` that only authenticated connections may hold.
    public var reservedForAuthenticated: Int

    /// What to do with a new connection.
    public enum Decision: Equatable, Sendable {
        /// A slot is free: take it.
        case admit
        /// No slot is free for an unauthenticated connection: close the oldest one that has not
        /// authenticated and take its slot.
        case admitEvictingOldest
        /// Every slot is held by authenticated connections: refuse.
        case refuse
    }

    /// A budget for connections that may buffer `headBytes` of upgrade head and `messageBytes`
    /// of handshake message each.
    public init(memoryBytes: Int, headBytes: Int, messageBytes: Int, maxConnections: Int, reservedForAuthenticated: Int) {
        self.memoryBytes = max(0, memoryBytes)
        self.bytesPerConnection = max(1, headBytes) + max(1, messageBytes) + Self.connectionOverheadBytes
        self.maxConnections = max(1, maxConnections)
        self.reservedForAuthenticated = min(max(0, reservedForAuthenticated), self.maxConnections - 1)
    }

    /// The most unauthenticated connections at once: what the memory allows, and never the
    /// reserved slots; at least one.
    public var maxPreAuthenticated: Int {
        max(1, min(memoryBytes / bytesPerConnection, maxConnections - reservedForAuthenticated))
    }

    /// The most memory the unauthenticated connections can hold at once under this budget.
    public var heldBytesBound: Int { maxPreAuthenticated * bytesPerConnection }

    /// Whether a new connection may start, given `preAuthenticated` connections not
    /// authenticated yet among `total` open ones.
    public func admit(preAuthenticated: Int, total: Int) -> Decision {
        if total < maxConnections && preAuthenticated < maxPreAuthenticated { return .admit }
        return preAuthenticated > 0 ? .admitEvictingOldest : .refuse
    }
}
