import SyncCore

/// Other masters of this master's store on the LAN: services of its own DNS-SD type that name
/// its store id in their TXT record (`store=`) and are not its own announcement. Two masters
/// of one store split it: each takes writes the other never sees. The master browses its own
/// type once published (`MasterNode`); each service it resolves or loses is fed here. A rival
/// is warned about (`master.rival_seen`), listed in status (`rivals`), makes `ordersync check`
/// CRITICAL and sets `ordersync_rival_masters`; it goes when its service leaves the LAN.
///
/// Its own announcement is told apart by its instance name: DNS-SD names are unique on a link
/// (RFC 6763 9: "the Multicast DNS responder ... will automatically select a new unique name"
/// on a conflict), so a copy of the store on another host, even with the same key, shows under
/// another name.
public struct RivalMasters: Sendable, Equatable {
    /// What a browse resolved, as plain values.
    public struct Announcement: Sendable, Equatable {
        /// The DNS-SD instance name.
        public var name: String
        /// The SRV target host.
        public var hostName: String
        /// The resolved address.
        public var address: String
        /// The SRV port.
        public var port: UInt16
        /// The TXT entries.
        public var txt: [String: String]

        /// An announcement from its members.
        public init(name: String, hostName: String, address: String, port: UInt16, txt: [String: String]) {
            self.name = name
            self.hostName = hostName
            self.address = address
            self.port = port
            self.txt = txt
        }
    }

    /// What feeding an announcement changed.
    public enum Change: Sendable, Equatable {
        /// A rival not seen before (or seen again after it left): warn.
        case appeared(MasterStatus.RivalMaster)
        /// A known rival announced new values (address, term): nothing to warn about again.
        case updated
        /// A service that was a rival is one no more (it changed its store): it is gone.
        case gone(MasterStatus.RivalMaster)
        /// Not a rival, and not one before.
        case none
    }

    /// The rivals by instance name.
    private var byName: [String: MasterStatus.RivalMaster] = [:]

    /// No rival yet.
    public init() {}

    /// The rivals, by name.
    public var list: [MasterStatus.RivalMaster] {
        byName.values.sorted { $0.name < $1.name }
    }

    /// Whether `a` is another master of `storeId`: an OrderSync service naming that store,
    /// under a name that is not `ownName` (the name Avahi confirmed for this master's own
    /// service; nil while unconfirmed, when only a different `askedName` is another's).
    public static func isRival(_ a: Announcement, storeId: String, ownName: String?, askedName: String) -> Bool {
        guard a.txt["proto"] == orderSyncProtocolName, a.txt["store"] == storeId else { return false }
        return a.name != (ownName ?? askedName)
    }

    /// A service was resolved (or its resolution changed) at `nowMillis`.
    public mutating func found(_ a: Announcement, storeId: String, ownName: String?, askedName: String, nowMillis: Int64) -> Change {
        guard Self.isRival(a, storeId: storeId, ownName: ownName, askedName: askedName) else {
            return lost(name: a.name)
        }
        let known = byName[a.name]
        let rival = MasterStatus.RivalMaster(
            name: a.name, address: "\(a.address):\(a.port)", hostName: a.hostName, nodeId: a.txt["id"],
            term: a.txt["term"].flatMap { Int64($0) }, role: a.txt["role"], sinceMillis: known?.sinceMillis ?? nowMillis)
        byName[a.name] = rival
        return known == nil ? .appeared(rival) : .updated
    }

    /// The service named `name` left the LAN (or stopped being a rival).
    public mutating func lost(name: String) -> Change {
        guard let gone = byName.removeValue(forKey: name) else { return .none }
        return .gone(gone)
    }

    /// Every service is gone at once (avahi-daemon went away: the browse reports none until
    /// it is back). Returns the rivals forgotten.
    public mutating func forgetAll() -> [MasterStatus.RivalMaster] {
        let all = list
        byName = [:]
        return all
    }
}

extension MasterStatus {
    /// Another master of this store on the LAN (`rivals` in `GET /v1/status`).
    public struct RivalMaster: Sendable, Equatable {
        /// Its DNS-SD instance name.
        public var name: String
        /// Its address and port.
        public var address: String
        /// Its host (the SRV target).
        public var hostName: String
        /// The node id it announces (`id=`); a copy of this store's data directory announces this
        /// master's own.
        public var nodeId: String?
        /// The term it announces (`term=`).
        public var term: Int64?
        /// `master` or `candidate` (`role=`), as it announces.
        public var role: String?
        /// When this master first saw it (wall-clock milliseconds since 1970).
        public var sinceMillis: Int64

        /// A rival from its members.
        public init(
            name: String, address: String, hostName: String, nodeId: String?, term: Int64?, role: String?, sinceMillis: Int64
        ) {
            self.name = name
            self.address = address
            self.hostName = hostName
            self.nodeId = nodeId
            self.term = term
            self.role = role
            self.sinceMillis = sinceMillis
        }
    }
}
