import JSON

// The commit counters of `GET /v1/status` (`commits`): the master's group commits and a slave's
// replica batches, every member required.

extension CommitStatus: NodeJSONCodable {
    /// Every counter, in order.
    public var jsonValue: JSONValue {
        nodeJSONObject([
            "groups": groups, "messages": messages, "operations": operations, "largestGroup": largestGroup,
            "failed": failed, "lastCommitMicros": lastCommitMicros,
        ])
    }

    /// The counters from their members.
    public init(json: JSONValue) throws(NodeJSONError) {
        let f = try NodeJSONFields(json)
        self.init()
        groups = try f.decode("groups")
        messages = try f.decode("messages")
        operations = try f.decode("operations")
        largestGroup = try f.decode("largestGroup")
        failed = try f.decode("failed")
        lastCommitMicros = try f.decode("lastCommitMicros")
    }
}

extension ReplicaCommitStatus: NodeJSONCodable {
    /// Every counter, in order.
    public var jsonValue: JSONValue {
        nodeJSONObject(["batches": batches, "messages": messages, "largestBatch": largestBatch, "failed": failed])
    }

    /// The counters from their members.
    public init(json: JSONValue) throws(NodeJSONError) {
        let f = try NodeJSONFields(json)
        self.init()
        batches = try f.decode("batches")
        messages = try f.decode("messages")
        largestBatch = try f.decode("largestBatch")
        failed = try f.decode("failed")
    }
}
