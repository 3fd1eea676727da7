import JSON

// The parts of `GET /v1/status` kept apart from `NodeStatus`: readiness, the last error, the
// pairing windows and the commit counters; members in order, an absent value as `null`.

extension NodeReadiness.Store: NodeJSONCodable {}
extension NodeReadiness.Published: NodeJSONCodable {}
extension NodeReadiness.Link: NodeJSONCodable {}
extension NodeReadyState: NodeJSONCodable {}
extension PairingWindowStatus.State: NodeJSONCodable {}

extension NodeReadiness: NodeJSONCodable {
    /// Every member, absent ones as `null`.
    public var jsonValue: JSONValue {
        nodeJSONObject(["store": store, "published": published, "link": link, "storeFailure": storeFailure])
    }

    /// Readiness from its members.
    public init(json: JSONValue) throws(NodeJSONError) {
        let f = try NodeJSONFields(json)
        self.init(
            store: try f.decode("store"), published: try f.decodeIfPresent("published"), link: try f.decodeIfPresent("link"),
            storeFailure: try f.decodeIfPresent("storeFailure"))
    }
}

extension NodeError: NodeJSONCodable {
    /// The event, what it said and when.
    public var jsonValue: JSONValue {
        nodeJSONObject(["event": event, "message": message, "at": at])
    }

    /// The last error from its members.
    public init(json: JSONValue) throws(NodeJSONError) {
        let f = try NodeJSONFields(json)
        self.init(event: try f.decode("event"), message: try f.decode("message"), at: try f.decode("at"))
    }
}

extension PairingWindowStatus: NodeJSONCodable {
    /// Every member, absent ones as `null`.
    public var jsonValue: JSONValue {
        nodeJSONObject([
            "state": state, "name": name, "expiresAtMillis": expiresAtMillis, "openCodes": openCodes,
            "lockedOutAddresses": lockedOutAddresses,
        ])
    }

    /// Reads a status; from a master of an earlier version (a single window), `openCodes` and
    /// `lockedOutAddresses` are 0 and its `exhausted` state (or any state this version does not
    /// know) reads as `closed`.
    public init(json: JSONValue) throws(NodeJSONError) {
        let f = try NodeJSONFields(json)
        let state: String = try f.decode("state")
        self.init(
            state: State(rawValue: state) ?? .closed, name: try f.decodeIfPresent("name"),
            expiresAtMillis: try f.decodeIfPresent("expiresAtMillis"), openCodes: try f.decodeIfPresent("openCodes") ?? 0,
            lockedOutAddresses: try f.decodeIfPresent("lockedOutAddresses") ?? 0)
    }
}
