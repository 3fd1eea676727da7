import JSON

/// Automatic failover as status shows it (`autoFailover`; nil, `null`, without
/// `--auto-failover`): a master's lease, or a voter slave's watch over its master
/// (Docs/PROTOCOL.md, "Automatic failover").
public struct AutoFailoverStatus: Sendable, Equatable {
    /// Where automatic failover stands.
    public enum State: String, Sendable {
        /// Master: a majority of the voters heard within the lease; writes are acknowledged.
        case held
        /// Master: fewer than a majority heard; writes are refused `no_quorum`.
        case lapsed
        /// Slave: watching its master, ready to stand when it falls silent.
        case watching
        /// Slave: a candidacy it started is running.
        case standing
        /// The flag is given but the store has fewer than 3 voters (or this terminal is no voter).
        case off
    }

    /// Where it stands.
    public var state: State
    /// The lease, in milliseconds.
    public var leaseMillis: Int64
    /// Master: voters heard within the lease, itself counted.
    public var heard: Int?
    /// Master: the voters a majority needs, itself counted.
    public var majority: Int?
    /// Slave: milliseconds since its master was last heard.
    public var silentMillis: Int64?
    /// Slave: the silence after which it stands (election timeout, stagger and jitter).
    public var standAfterMillis: Int64?

    /// A status from its members.
    public init(
        state: State, leaseMillis: Int64, heard: Int? = nil, majority: Int? = nil, silentMillis: Int64? = nil,
        standAfterMillis: Int64? = nil
    ) {
        self.state = state
        self.leaseMillis = leaseMillis
        self.heard = heard
        self.majority = majority
        self.silentMillis = silentMillis
        self.standAfterMillis = standAfterMillis
    }
}

extension AutoFailoverStatus.State: NodeJSONCodable {}

extension AutoFailoverStatus: NodeJSONCodable {
    /// Every member, absent ones as `null`.
    public var jsonValue: JSONValue {
        nodeJSONObject([
            "state": state, "leaseMillis": leaseMillis, "heard": heard, "majority": majority, "silentMillis": silentMillis,
            "standAfterMillis": standAfterMillis,
        ])
    }

    /// The status from its members.
    public init(json: JSONValue) throws(NodeJSONError) {
        let f = try NodeJSONFields(json)
        self.init(
            state: try f.decode("state"), leaseMillis: try f.decode("leaseMillis"), heard: try f.decodeIfPresent("heard"),
            majority: try f.decodeIfPresent("majority"), silentMillis: try f.decodeIfPresent("silentMillis"),
            standAfterMillis: try f.decodeIfPresent("standAfterMillis"))
    }
}
