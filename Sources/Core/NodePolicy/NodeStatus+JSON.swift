import JSON

// `GET /v1/status` as JSON: every member in the order declared, an absent value as `null`
// (never left out). Reading is as lenient as the daemon's versions need: an optional member may
// be absent or `null`; every other member must be there with its type.

extension NodeStatus: NodeJSONCodable {
    /// The role's status (it carries its `role` member).
    public var jsonValue: JSONValue {
        switch self {
        case .master(let status): return status.jsonValue
        case .slave(let status): return status.jsonValue
        }
    }

    /// The role's status, chosen by its `role` member.
    public init(json: JSONValue) throws(NodeJSONError) {
        switch try NodeJSONFields(json).decode("role", as: NodeRole.self) {
        case .master: self = .master(try MasterStatus(json: json))
        case .slave: self = .slave(try SlaveStatus(json: json))
        }
    }
}

extension NodeRole: NodeJSONCodable {}
extension AvahiState: NodeJSONCodable {}
extension MasterStatus.PeerProtocol: NodeJSONCodable {}
extension SlaveStatus.PairingState: NodeJSONCodable {}
extension SlaveStatus.LinkState: NodeJSONCodable {}

extension MasterStatus: NodeJSONCodable {
    /// Every member, absent ones as `null`.
    public var jsonValue: JSONValue {
        nodeJSONObject([
            "role": role, "version": version, "store": store, "name": name, "nodeId": nodeId, "epoch": epoch, "seq": seq,
            "orders": orders, "port": port, "dataDir": dataDir, "serviceType": serviceType, "serviceName": serviceName,
            "avahi": avahi, "uptimeSeconds": uptimeSeconds, "peers": peers, "terminals": terminals, "tombstones": tombstones,
            "pairing": pairing, "pairedTerminals": pairedTerminals, "previousNodeId": previousNodeId, "commits": commits,
            "storeposForeign": storeposForeign, "ready": ready, "state": state, "lastError": lastError, "term": term,
            "syncReplicas": syncReplicas, "voters": voters, "autoFailover": autoFailover, "away": away, "rivals": rivals,
        ])
    }

    /// A master's status.
    public init(json: JSONValue) throws(NodeJSONError) {
        let f = try NodeJSONFields(json)
        role = try f.decode("role")
        version = try f.decode("version")
        store = try f.decode("store")
        name = try f.decode("name")
        nodeId = try f.decode("nodeId")
        epoch = try f.decode("epoch")
        seq = try f.decode("seq")
        orders = try f.decode("orders")
        port = try f.decode("port")
        dataDir = try f.decode("dataDir")
        serviceType = try f.decode("serviceType")
        serviceName = try f.decodeIfPresent("serviceName")
        avahi = try f.decode("avahi")
        uptimeSeconds = try f.decode("uptimeSeconds")
        peers = try f.decodeArray("peers")
        terminals = try f.decodeArray("terminals")
        tombstones = try f.decode("tombstones")
        pairing = try f.decode("pairing")
        pairedTerminals = try f.decode("pairedTerminals")
        previousNodeId = try f.decodeIfPresent("previousNodeId")
        commits = try f.decode("commits")
        storeposForeign = try f.decodeIfPresent("storeposForeign")
        ready = try f.decodeIfPresent("ready")
        state = try f.decodeIfPresent("state")
        lastError = try f.decodeIfPresent("lastError")
        term = try f.decodeIfPresent("term")
        syncReplicas = try f.decodeIfPresent("syncReplicas")
        voters = try f.decodeIfPresent("voters")
        autoFailover = try f.decodeIfPresent("autoFailover")
        away = try f.decodeIfPresent("away")
        rivals = try f.decodeIfPresent("rivals")
    }
}

extension MasterStatus.Peer: NodeJSONCodable {
    /// Every member, absent ones as `null`.
    public var jsonValue: JSONValue {
        nodeJSONObject([
            "address": address, "protocol": `protocol`, "terminal": terminal, "terminalId": terminalId,
            "connectedSeconds": connectedSeconds, "lastSeenMillisAgo": lastSeenMillisAgo, "ackedSeq": ackedSeq, "lag": lag,
            "outbox": outbox, "messages": messages, "rejected": rejected, "held": held, "standbyLag": standbyLag,
            "clock": clock,
        ])
    }

    /// One open link.
    public init(json: JSONValue) throws(NodeJSONError) {
        let f = try NodeJSONFields(json)
        address = try f.decode("address")
        `protocol` = try f.decode("protocol")
        terminal = try f.decodeIfPresent("terminal")
        terminalId = try f.decodeIfPresent("terminalId")
        connectedSeconds = try f.decode("connectedSeconds")
        lastSeenMillisAgo = try f.decode("lastSeenMillisAgo")
        ackedSeq = try f.decodeIfPresent("ackedSeq")
        lag = try f.decodeIfPresent("lag")
        outbox = try f.decodeIfPresent("outbox")
        messages = try f.decode("messages")
        rejected = try f.decode("rejected")
        held = try f.decodeIfPresent("held")
        standbyLag = try f.decodeIfPresent("standbyLag")
        clock = try f.decodeIfPresent("clock")
    }
}

extension MasterStatus.KnownTerminal: NodeJSONCodable {
    /// Every member, absent ones as `null`.
    public var jsonValue: JSONValue {
        nodeJSONObject([
            "terminalId": terminalId, "name": name, "address": address, "connected": connected, "ackedSeq": ackedSeq,
            "lag": lag, "lastSeen": lastSeen, "outbox": outbox,
        ])
    }

    /// A slave the master knows.
    public init(json: JSONValue) throws(NodeJSONError) {
        let f = try NodeJSONFields(json)
        terminalId = try f.decode("terminalId")
        name = try f.decode("name")
        address = try f.decode("address")
        connected = try f.decode("connected")
        ackedSeq = try f.decode("ackedSeq")
        lag = try f.decode("lag")
        lastSeen = try f.decode("lastSeen")
        outbox = try f.decodeIfPresent("outbox")
    }
}

extension SlaveStatus: NodeJSONCodable {
    /// Every member, absent ones as `null`.
    public var jsonValue: JSONValue {
        nodeJSONObject([
            "role": role, "version": version, "store": store, "name": name, "nodeId": nodeId, "terminalId": terminalId,
            "masterId": masterId, "pairing": pairing, "seq": seq, "masterSeq": masterSeq, "lag": lag, "epoch": epoch,
            "orders": orders, "dataDir": dataDir, "avahi": avahi, "uptimeSeconds": uptimeSeconds, "master": master,
            "pendingWrites": pendingWrites, "outbox": outbox, "mastersSeen": mastersSeen, "commits": commits, "ready": ready,
            "state": state, "lastError": lastError, "term": term, "following": following, "held": held,
            "autoFailover": autoFailover, "clock": clock,
        ])
    }

    /// A slave's status.
    public init(json: JSONValue) throws(NodeJSONError) {
        let f = try NodeJSONFields(json)
        role = try f.decode("role")
        version = try f.decode("version")
        store = try f.decodeIfPresent("store")
        name = try f.decode("name")
        nodeId = try f.decode("nodeId")
        terminalId = try f.decode("terminalId")
        masterId = try f.decodeIfPresent("masterId")
        pairing = try f.decode("pairing")
        seq = try f.decode("seq")
        masterSeq = try f.decode("masterSeq")
        lag = try f.decodeIfPresent("lag")
        epoch = try f.decodeIfPresent("epoch")
        orders = try f.decode("orders")
        dataDir = try f.decode("dataDir")
        avahi = try f.decode("avahi")
        uptimeSeconds = try f.decode("uptimeSeconds")
        master = try f.decode("master")
        pendingWrites = try f.decode("pendingWrites")
        outbox = try f.decode("outbox")
        mastersSeen = try f.decodeArray("mastersSeen")
        commits = try f.decode("commits")
        ready = try f.decodeIfPresent("ready")
        state = try f.decodeIfPresent("state")
        lastError = try f.decodeIfPresent("lastError")
        term = try f.decodeIfPresent("term")
        following = try f.decodeIfPresent("following")
        held = try f.decodeIfPresent("held")
        autoFailover = try f.decodeIfPresent("autoFailover")
        clock = try f.decodeIfPresent("clock")
    }
}

extension SlaveStatus.Link: NodeJSONCodable {
    /// Every member, absent ones as `null`.
    public var jsonValue: JSONValue {
        nodeJSONObject([
            "state": state, "url": url, "serviceName": serviceName, "sinceSeconds": sinceSeconds,
            "lastSeenMillisAgo": lastSeenMillisAgo, "lastError": lastError, "notLiveSeconds": notLiveSeconds,
        ])
    }

    /// The link to the master.
    public init(json: JSONValue) throws(NodeJSONError) {
        let f = try NodeJSONFields(json)
        state = try f.decode("state")
        url = try f.decodeIfPresent("url")
        serviceName = try f.decodeIfPresent("serviceName")
        sinceSeconds = try f.decode("sinceSeconds")
        lastSeenMillisAgo = try f.decodeIfPresent("lastSeenMillisAgo")
        lastError = try f.decodeIfPresent("lastError")
        notLiveSeconds = try f.decodeIfPresent("notLiveSeconds")
    }
}

extension SlaveStatus.SeenMaster: NodeJSONCodable {
    /// Every member, absent ones as `null`.
    public var jsonValue: JSONValue {
        nodeJSONObject(["name": name, "address": address, "store": store])
    }

    /// A master seen on the LAN.
    public init(json: JSONValue) throws(NodeJSONError) {
        let f = try NodeJSONFields(json)
        name = try f.decode("name")
        address = try f.decode("address")
        store = try f.decodeIfPresent("store")
    }
}
