import JSON

// What status shows of failover (Docs/PROTOCOL.md 7): a master's voters and majority, the
// master a slave follows.

extension MasterStatus {
    /// The store's voters: the master and every paired terminal not revoked whose voter flag
    /// is set (`ordersync pair --handheld` clears it). A promotion needs `majority` of them.
    public struct Voters: Sendable, Equatable {
        /// How many vote.
        public var count: Int
        /// Their names, the master's first, then the terminals' by name.
        public var names: [String]
        /// floor(count / 2) + 1.
        public var majority: Int

        /// Voters from their names (the master's first).
        public init(names: [String]) {
            self.names = names
            count = names.count
            majority = names.count / 2 + 1
        }

        /// Voters from their members, as a status carries them.
        public init(count: Int, names: [String], majority: Int) {
            self.count = count
            self.names = names
            self.majority = majority
        }
    }
}

extension SlaveStatus {
    /// The master a slave follows: the one its link last proved.
    public struct FollowedMaster: Sendable, Equatable {
        /// Its node id.
        public var id: String
        /// Its DNS-SD instance name, when known.
        public var name: String?

        /// A master from its members.
        public init(id: String, name: String? = nil) {
            self.id = id
            self.name = name
        }
    }
}

extension MasterStatus.Voters: NodeJSONCodable {
    /// Every member.
    public var jsonValue: JSONValue {
        nodeJSONObject(["count": count, "names": names, "majority": majority])
    }

    /// The voters as a status carries them.
    public init(json: JSONValue) throws(NodeJSONError) {
        let f = try NodeJSONFields(json)
        self.init(count: try f.decode("count"), names: try f.decodeArray("names"), majority: try f.decode("majority"))
    }
}

extension SlaveStatus.FollowedMaster: NodeJSONCodable {
    /// Every member, absent ones as `null`.
    public var jsonValue: JSONValue {
        nodeJSONObject(["id": id, "name": name])
    }

    /// The followed master as a status carries it.
    public init(json: JSONValue) throws(NodeJSONError) {
        let f = try NodeJSONFields(json)
        self.init(id: try f.decode("id"), name: try f.decodeIfPresent("name"))
    }
}
