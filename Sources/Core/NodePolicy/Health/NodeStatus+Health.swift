import JSON

// What `GET /v1/status` shows of the node's health beyond readiness: a master's away terminals
// and rival masters, a store's failing commits; members in order, an absent value as `null`.

extension MasterStatus.AwayTerminal: NodeJSONCodable {
    /// Every member, absent ones as `null`.
    public var jsonValue: JSONValue {
        nodeJSONObject([
            "terminalId": terminalId, "name": name, "address": address, "awaySeconds": awaySeconds, "behind": behind,
            "ackedSeq": ackedSeq, "lastSeen": lastSeen, "outbox": outbox,
        ])
    }

    /// An away terminal as a status carries it.
    public init(json: JSONValue) throws(NodeJSONError) {
        let f = try NodeJSONFields(json)
        self.init(
            terminalId: try f.decode("terminalId"), name: try f.decode("name"), address: try f.decodeIfPresent("address"),
            awaySeconds: try f.decode("awaySeconds"), behind: try f.decode("behind"), ackedSeq: try f.decodeIfPresent("ackedSeq"),
            lastSeen: try f.decodeIfPresent("lastSeen"), outbox: try f.decodeIfPresent("outbox"))
    }
}

extension MasterStatus.RivalMaster: NodeJSONCodable {
    /// Every member, absent ones as `null`; `since` as ISO 8601 text.
    public var jsonValue: JSONValue {
        nodeJSONObject([
            "name": name, "address": address, "hostName": hostName, "nodeId": nodeId, "term": term, "role": role,
            "since": NodeError.isoTime(epochMillis: sinceMillis), "sinceMillis": sinceMillis,
        ])
    }

    /// A rival as a status carries it.
    public init(json: JSONValue) throws(NodeJSONError) {
        let f = try NodeJSONFields(json)
        self.init(
            name: try f.decode("name"), address: try f.decode("address"), hostName: try f.decode("hostName"),
            nodeId: try f.decodeIfPresent("nodeId"), term: try f.decodeIfPresent("term"), role: try f.decodeIfPresent("role"),
            sinceMillis: try f.decode("sinceMillis"))
    }
}

extension StoreFailure: NodeJSONCodable {
    /// Every member, absent ones as `null`; the times also as ISO 8601 text.
    public var jsonValue: JSONValue {
        nodeJSONObject([
            "problem": problem, "error": error, "path": path, "failures": failures,
            "since": NodeError.isoTime(epochMillis: sinceMillis), "sinceMillis": sinceMillis, "lastMillis": lastMillis,
        ])
    }

    /// A failure as a status carries it.
    public init(json: JSONValue) throws(NodeJSONError) {
        let f = try NodeJSONFields(json)
        self.init(
            problem: try f.decode("problem"), error: try f.decode("error"), path: try f.decodeIfPresent("path"),
            failures: try f.decode("failures"), sinceMillis: try f.decode("sinceMillis"), lastMillis: try f.decode("lastMillis"))
    }
}
