/// Where one paired terminal is, as the master knows it: connected now, or away since it was
/// last seen, with the last sequence it acknowledged. Built by the master for each paired
/// terminal not revoked (status, check and the per-terminal metrics read the same values), so
/// the label set of the metrics is that of the paired terminals, never of guest addresses.
public struct TerminalPresence: Sendable, Equatable {
    /// Its node id (the key it paired with).
    public var terminalId: String
    /// Its paired name.
    public var name: String
    /// Whether a link of it is open now.
    public var connected: Bool
    /// When it was last heard from (wall-clock milliseconds; now while connected), nil when it
    /// never connected after pairing.
    public var lastSeenMillis: Int64?
    /// When it paired.
    public var pairedAtMillis: Int64
    /// The last sequence it acknowledged, nil when it never did.
    public var ackedSeq: Int64?
    /// Its last address.
    public var address: String?
    /// Changes in its outbox when it last said.
    public var outbox: Int?

    /// A terminal's presence from its members.
    public init(
        terminalId: String, name: String, connected: Bool, lastSeenMillis: Int64?, pairedAtMillis: Int64, ackedSeq: Int64? = nil,
        address: String? = nil, outbox: Int? = nil
    ) {
        self.terminalId = terminalId
        self.name = name
        self.connected = connected
        self.lastSeenMillis = lastSeenMillis
        self.pairedAtMillis = pairedAtMillis
        self.ackedSeq = ackedSeq
        self.address = address
        self.outbox = outbox
    }

    /// Operations of the journal it has not acknowledged: the head (`lastSeq`) minus its last
    /// ack (everything when it never acknowledged anything).
    public func behind(lastSeq: Int64) -> Int64 {
        max(0, lastSeq - (ackedSeq ?? 0))
    }

    /// The terminal as an away one (`away` in the master's status), nil while it is connected.
    /// Away since it was last seen, or since it paired when it never connected.
    public func away(lastSeq: Int64, nowMillis: Int64) -> MasterStatus.AwayTerminal? {
        guard !connected else { return nil }
        let since = lastSeenMillis ?? pairedAtMillis
        return MasterStatus.AwayTerminal(
            terminalId: terminalId, name: name, address: address, awaySeconds: max(0, nowMillis - since) / 1000,
            behind: behind(lastSeq: lastSeq), ackedSeq: ackedSeq,
            lastSeen: lastSeenMillis.map { NodeError.isoTime(epochMillis: $0) }, outbox: outbox)
    }
}

extension MasterStatus {
    /// A paired terminal (not revoked) with no open link: how long it has been away and how far
    /// behind the journal it is (`away` in `GET /v1/status`).
    public struct AwayTerminal: Sendable, Equatable {
        /// Its node id.
        public var terminalId: String
        /// Its paired name.
        public var name: String
        /// Its last address, nil when it never connected.
        public var address: String?
        /// Seconds since it was last seen (since it paired, when it never connected).
        public var awaySeconds: Int64
        /// The master's journal head minus its last acknowledged sequence.
        public var behind: Int64
        /// The last sequence it acknowledged, nil when it never did.
        public var ackedSeq: Int64?
        /// When it was last seen, ISO 8601 in UTC; nil when it never connected.
        public var lastSeen: String?
        /// Changes in its outbox when it was last heard (it may hold more now).
        public var outbox: Int?

        /// An away terminal from its members.
        public init(
            terminalId: String, name: String, address: String?, awaySeconds: Int64, behind: Int64, ackedSeq: Int64?,
            lastSeen: String?, outbox: Int?
        ) {
            self.terminalId = terminalId
            self.name = name
            self.address = address
            self.awaySeconds = awaySeconds
            self.behind = behind
            self.ackedSeq = ackedSeq
            self.lastSeen = lastSeen
            self.outbox = outbox
        }
    }
}
