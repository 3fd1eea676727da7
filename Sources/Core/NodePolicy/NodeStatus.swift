/// What a node is doing, as `GET /v1/status` answers it and `ordersync status` shows it: one
/// typed value, encoded by the local API and decoded by the CLI.
public enum NodeStatus: Sendable, Equatable {
    /// A master's status.
    case master(MasterStatus)
    /// A slave's status.
    case slave(SlaveStatus)
}

/// The node's connection to avahi-daemon, as status shows it.
public enum AvahiState: String, Sendable {
    /// Not connected yet.
    case starting
    /// Connected; the service is published or browsed.
    case up
    /// The daemon went away; the node keeps serving and reconnects.
    case down
    /// The Avahi client could not be created at all.
    case unavailable
    /// A slave started with `--master` does not use discovery.
    case notUsedWithFixedMaster = "not used (--master)"
    /// The node was built without discovery.
    case notUsed = "not used"
}

/// A master's status.
public struct MasterStatus: Sendable, Equatable {
    /// Always `master`.
    public var role = NodeRole.master
    /// The daemon's version.
    public var version: String
    /// The store id.
    public var store: String
    /// The terminal (and DNS-SD instance) name.
    public var name: String
    /// The node id: a readable hash of the node's static public key (see `NodeIdentity`).
    public var nodeId: String
    /// The database epoch: changes when the master's database is replaced.
    public var epoch: String
    /// The last journal sequence.
    public var seq: Int64
    /// Orders in the store.
    public var orders: Int
    /// The port terminals connect to.
    public var port: UInt16
    /// The data directory.
    public var dataDir: String
    /// The DNS-SD service type.
    public var serviceType: String
    /// The published instance name, once Avahi confirmed it.
    public var serviceName: String?
    /// The connection to avahi-daemon.
    public var avahi: AvahiState
    /// Seconds since the node started.
    public var uptimeSeconds: Int64
    /// Every open WebSocket link.
    public var peers: [Peer]
    /// Every slave the master knows, connected or not.
    public var terminals: [KnownTerminal]
    /// Removed orders whose tombstones are still kept.
    public var tombstones: Int
    /// The pairing window (`ordersync pair`).
    public var pairing: PairingWindowStatus
    /// Paired terminals not revoked.
    public var pairedTerminals: Int
    /// The node id of the master's previous key, after a key rotation.
    public var previousNodeId: String?
    /// How the group commits went (Docs/ARCHITECTURE.md, "The master's hot path").
    public var commits = CommitStatus()
    /// Orders StorePOS apps named that the store does not have, not yet adopted or cleared
    /// (`ordersync storepos foreign`; nil from an older daemon).
    public var storeposForeign: Int?
    /// Store readable and service published, as fixed values (`nil` from an older daemon).
    public var ready: NodeReadiness?
    /// `ready`, `degraded` or `failed`, from `ready`.
    public var state: NodeReadyState?
    /// The last event logged at warning or above, with its time.
    public var lastError: NodeError?
    /// The master's term (1 until a promotion; nil from an older daemon).
    public var term: Int64?
    /// Standbys a local API write waits for (`--sync-replicas`; 0: off; nil from an older daemon).
    public var syncReplicas: Int?
    /// The store's voters and the majority a promotion needs (nil from an older daemon).
    public var voters: Voters?
    /// `--auto-failover`: the lease or the watch (nil: off, or an older daemon).
    public var autoFailover: AutoFailoverStatus?
    /// Paired terminals with no open link, how long away and how far behind (nil: an older daemon).
    public var away: [AwayTerminal]?
    /// Other masters of this store seen on the LAN (nil: an older daemon).
    public var rivals: [RivalMaster]?

    /// Which protocol a connected terminal speaks.
    public enum PeerProtocol: String, Sendable {
        /// An OrderSync slave (a secure link, `ordersync.ik.v1` or `ordersync.pair.v1`).
        case ordersync
        /// A StorePOS terminal (no subprotocol).
        case storepos
    }

    /// One open link.
    public struct Peer: Sendable, Equatable {
        /// The terminal's address and port.
        public var address: String
        /// What it speaks.
        public var `protocol`: PeerProtocol
        /// A slave's paired name.
        public var terminal: String?
        /// A slave's node id (the key its link proved).
        public var terminalId: String?
        /// Seconds since it connected.
        public var connectedSeconds: Int64
        /// Milliseconds since a frame last arrived from it.
        public var lastSeenMillisAgo: Int64
        /// The last sequence it said it applied on this link.
        public var ackedSeq: Int64?
        /// Operations it is behind, from `ackedSeq`.
        public var lag: Int64?
        /// Changes waiting in its outbox for the master, as it last said (nil: it has not said,
        /// e.g. a StorePOS terminal).
        public var outbox: Int? = nil
        /// Messages received from it.
        public var messages: Int
        /// Its operations the master refused.
        public var rejected: Int
        /// A standby's copy: the highest sequence it holds on disk, as its last ack said (nil:
        /// not said, e.g. a StorePOS terminal, which holds no standby copy).
        public var held: Int64? = nil
        /// Operations its standby copy lacks: the master's seq minus `held`.
        public var standbyLag: Int64? = nil
        /// An OrderSync slave's clock against the master's (nil until measured; `ClockStatus`).
        public var clock: ClockStatus? = nil

        /// A status from its members.
        public init(
            address: String, `protocol`: PeerProtocol, terminal: String? = nil, terminalId: String? = nil, connectedSeconds: Int64,
            lastSeenMillisAgo: Int64, ackedSeq: Int64? = nil, lag: Int64? = nil, outbox: Int? = nil, messages: Int, rejected: Int
        ) {
            self.address = address
            self.protocol = `protocol`
            self.terminal = terminal
            self.terminalId = terminalId
            self.connectedSeconds = connectedSeconds
            self.lastSeenMillisAgo = lastSeenMillisAgo
            self.ackedSeq = ackedSeq
            self.lag = lag
            self.outbox = outbox
            self.messages = messages
            self.rejected = rejected
        }
    }

    /// A slave the master knows.
    public struct KnownTerminal: Sendable, Equatable {
        /// Its terminal id.
        public var terminalId: String
        /// Its name.
        public var name: String
        /// Its last address.
        public var address: String
        /// Whether it is connected now.
        public var connected: Bool
        /// The last sequence it acknowledged.
        public var ackedSeq: Int64
        /// Operations it is behind.
        public var lag: Int64
        /// When it was last seen (StorePOS timestamp text).
        public var lastSeen: String
        /// Changes waiting in its outbox, as it last said (while away: when it was last heard,
        /// it may hold more now); nil if it never said.
        public var outbox: Int? = nil

        /// A status from its members.
        public init(
            terminalId: String, name: String, address: String, connected: Bool, ackedSeq: Int64, lag: Int64, lastSeen: String,
            outbox: Int? = nil
        ) {
            self.terminalId = terminalId
            self.name = name
            self.address = address
            self.connected = connected
            self.ackedSeq = ackedSeq
            self.lag = lag
            self.lastSeen = lastSeen
            self.outbox = outbox
        }
    }

    /// A status from its members.
    public init(
        role: NodeRole = .master, version: String, store: String, name: String, nodeId: String, epoch: String, seq: Int64, orders: Int,
        port: UInt16, dataDir: String, serviceType: String, serviceName: String? = nil, avahi: AvahiState, uptimeSeconds: Int64,
        peers: [Peer], terminals: [KnownTerminal], tombstones: Int, pairing: PairingWindowStatus, pairedTerminals: Int,
        previousNodeId: String? = nil, commits: CommitStatus = CommitStatus(), storeposForeign: Int? = nil, ready: NodeReadiness? = nil,
        state: NodeReadyState? = nil, lastError: NodeError? = nil
    ) {
        self.role = role
        self.version = version
        self.store = store
        self.name = name
        self.nodeId = nodeId
        self.epoch = epoch
        self.seq = seq
        self.orders = orders
        self.port = port
        self.dataDir = dataDir
        self.serviceType = serviceType
        self.serviceName = serviceName
        self.avahi = avahi
        self.uptimeSeconds = uptimeSeconds
        self.peers = peers
        self.terminals = terminals
        self.tombstones = tombstones
        self.pairing = pairing
        self.pairedTerminals = pairedTerminals
        self.previousNodeId = previousNodeId
        self.commits = commits
        self.storeposForeign = storeposForeign
        self.ready = ready
        self.state = state
        self.lastError = lastError
    }
}

/// A slave's status.
public struct SlaveStatus: Sendable, Equatable {
    /// Always `slave`.
    public var role = NodeRole.slave
    /// The daemon's version.
    public var version: String
    /// The store it belongs to, once known.
    public var store: String?
    /// The terminal name.
    public var name: String
    /// The node id: a readable hash of the node's static public key (see `NodeIdentity`).
    public var nodeId: String
    /// The terminal id.
    public var terminalId: String
    /// The node id of the master this terminal paired with (its current key); nil while not
    /// paired.
    public var masterId: String?
    /// Where the terminal stands with its master's key.
    public var pairing: PairingState
    /// The last sequence applied to the replica.
    public var seq: Int64
    /// The master's last sequence, as far as the slave knows.
    public var masterSeq: Int64
    /// Operations the replica is behind the master's head; nil while the link is not live (it
    /// cannot know how far the master went meanwhile).
    public var lag: Int64?
    /// The master's database epoch, once synced.
    public var epoch: String?
    /// Orders in the replica.
    public var orders: Int
    /// The data directory.
    public var dataDir: String
    /// The connection to avahi-daemon.
    public var avahi: AvahiState
    /// Seconds since the node started.
    public var uptimeSeconds: Int64
    /// The link to the master.
    public var master: Link
    /// Local API writes waiting for the master's answer.
    public var pendingWrites: Int
    /// Local changes waiting in the outbox.
    public var outbox: Int
    /// Masters seen on the LAN, oldest first.
    public var mastersSeen: [SeenMaster]
    /// How the master's messages were committed to the replica, in batches.
    public var commits = ReplicaCommitStatus()
    /// Store readable and master link live, as fixed values (`nil` from an older daemon).
    public var ready: NodeReadiness?
    /// `ready`, `degraded` or `failed`, from `ready`.
    public var state: NodeReadyState?
    /// The last event logged at warning or above, with its time.
    public var lastError: NodeError?
    /// The highest term this terminal followed or promised (1 until a promotion; nil from an
    /// older daemon).
    public var term: Int64?
    /// The master it follows (the last one its link proved), once known.
    public var following: FollowedMaster?
    /// The highest sequence its standby copy holds on disk (what its acks say as `held`).
    public var held: Int64?
    /// `--auto-failover`: the lease or the watch (nil: off, or an older daemon).
    public var autoFailover: AutoFailoverStatus?
    /// This terminal's clock against its master's (nil until measured; `ClockStatus`).
    public var clock: ClockStatus?

    /// Where a terminal stands with its master's key (`DATA/master.trust`).
    public enum PairingState: String, Sendable {
        /// Paired: every link is a Noise IK handshake with the trusted master key.
        case paired
        /// Started with `--pair CODE` and not paired with that code yet.
        case pairing
        /// Paired, but the master refuses this terminal (unknown or revoked): pair again.
        case refused
    }

    /// Where the link to the master is.
    public enum LinkState: String, Sendable {
        /// No master to connect to.
        case idle
        /// Waiting to try the master again.
        case waiting
        /// Connecting and handshaking.
        case connecting
        /// Connected, receiving the snapshot.
        case syncing
        /// Up to date; live operations flow.
        case live
    }

    /// The link to the master.
    public struct Link: Sendable, Equatable {
        /// Where it is.
        public var state: LinkState
        /// The master it connects (or waits to connect) to.
        public var url: String?
        /// The master's DNS-SD instance name, when discovered.
        public var serviceName: String?
        /// Seconds in this state.
        public var sinceSeconds: Int64
        /// Milliseconds since a frame last arrived from the master, while connected.
        public var lastSeenMillisAgo: Int64?
        /// Why the last link ended or the last attempt failed.
        public var lastError: String?
        /// Seconds since the link was last live (since the node started when it never was);
        /// `null` while live.
        public var notLiveSeconds: Int64?

        /// A status from its members.
        public init(
            state: LinkState, url: String? = nil, serviceName: String? = nil, sinceSeconds: Int64, lastSeenMillisAgo: Int64? = nil,
            lastError: String? = nil, notLiveSeconds: Int64? = nil
        ) {
            self.state = state
            self.url = url
            self.serviceName = serviceName
            self.sinceSeconds = sinceSeconds
            self.lastSeenMillisAgo = lastSeenMillisAgo
            self.lastError = lastError
            self.notLiveSeconds = notLiveSeconds
        }
    }

    /// A master seen on the LAN.
    public struct SeenMaster: Sendable, Equatable {
        /// Its DNS-SD instance name.
        public var name: String
        /// Address and port.
        public var address: String
        /// The store it announces.
        public var store: String?

        /// A status from its members.
        public init(
            name: String, address: String, store: String? = nil
        ) {
            self.name = name
            self.address = address
            self.store = store
        }
    }

    /// A status from its members.
    public init(
        role: NodeRole = .slave, version: String, store: String? = nil, name: String, nodeId: String, terminalId: String,
        masterId: String? = nil, pairing: PairingState, seq: Int64, masterSeq: Int64, lag: Int64?, epoch: String? = nil, orders: Int,
        dataDir: String, avahi: AvahiState, uptimeSeconds: Int64, master: Link, pendingWrites: Int, outbox: Int, mastersSeen: [SeenMaster],
        commits: ReplicaCommitStatus = ReplicaCommitStatus(), ready: NodeReadiness? = nil, state: NodeReadyState? = nil,
        lastError: NodeError? = nil
    ) {
        self.role = role
        self.version = version
        self.store = store
        self.name = name
        self.nodeId = nodeId
        self.terminalId = terminalId
        self.masterId = masterId
        self.pairing = pairing
        self.seq = seq
        self.masterSeq = masterSeq
        self.lag = lag
        self.epoch = epoch
        self.orders = orders
        self.dataDir = dataDir
        self.avahi = avahi
        self.uptimeSeconds = uptimeSeconds
        self.master = master
        self.pendingWrites = pendingWrites
        self.outbox = outbox
        self.mastersSeen = mastersSeen
        self.commits = commits
        self.ready = ready
        self.state = state
        self.lastError = lastError
    }
}
