import JSON

/// `POST /v1/promote` (`{"force": bool}`, the body optional): a running slave asked to become
/// the store's master (`ordersync promote`; Docs/PROTOCOL.md, "Promotion"). Pure. The answer
/// comes when the promotion is over: a ``PromoteAnswer`` (200), or a ``PromoteRefusal`` (409).
public struct PromoteRequest: Equatable, Sendable {
    /// Go on without a majority of voters (the operator attests the old master is gone).
    public var force: Bool

    /// A request, forced or not.
    public init(force: Bool) {
        self.force = force
    }

    /// The request for `method` and `path`, a failure for a malformed one, or nil when the path
    /// is not `/v1/promote` (another route then).
    public static func decode(method: String, path: String, body: [UInt8]) -> Result<PromoteRequest, LocalAPIRoute.Failure>? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: true)
        guard parts == ["v1", "promote"] else { return nil }
        guard method == "POST" else {
            return .failure(.init(status: 405, code: "method_not_allowed", message: "\(method) is not allowed on \(path)"))
        }
        guard !body.isEmpty else { return .success(PromoteRequest(force: false)) }
        let object: JSONObject
        do {
            guard let o = try JSONParser.parse(body).objectValue else {
                return .failure(.init(status: 400, code: "invalid_message", message: "request body must be a JSON object"))
            }
            object = o
        } catch {
            return .failure(.init(status: 400, code: "malformed_json", message: "request body is not valid JSON: \(error)"))
        }
        switch object["force"] {
        case nil, .null?: return .success(PromoteRequest(force: false))
        case .bool(let force)?: return .success(PromoteRequest(force: force))
        default: return .failure(.init(status: 400, code: "invalid_field", message: "'force' must be true or false"))
        }
    }

    /// The request body the CLI sends.
    public var jsonValue: JSONValue { .object(JSONObject([("force", .bool(force))])) }
}

/// What a promotion did, as `POST /v1/promote` answers it (200):
/// `{"promoted":true,"term":T,"seq":S,"voters":[..],"promised":[..],"unreachable":[..],
/// "fetched":{"from":name,"entries":n}|null,"forced":bool,"tookMs":n}`.
public struct PromoteAnswer: Equatable, Sendable, NodeJSONCodable {
    /// The tail fetched from the most advanced voter.
    public struct Fetched: Equatable, Sendable, NodeJSONCodable {
        /// The voter's name.
        public var from: String
        /// How many journal entries came from it.
        public var entries: Int

        /// A fetch from `from` of `entries` entries.
        public init(from: String, entries: Int) {
            self.from = from
            self.entries = entries
        }

        /// `{"from":..,"entries":n}`.
        public var jsonValue: JSONValue { nodeJSONObject(["from": from, "entries": entries]) }

        /// Reads `{"from":..,"entries":n}`.
        public init(json: JSONValue) throws(NodeJSONError) {
            let f = try NodeJSONFields(json)
            from = try f.decode("from")
            entries = try f.decode("entries")
        }
    }

    /// The new term.
    public var term: Int64
    /// The last seq of the journal the new master serves.
    public var seq: Int64
    /// Every voter of the store, by name.
    public var voters: [String]
    /// The voters that promised (the node itself included when it votes).
    public var promised: [String]
    /// The voters that did not answer.
    public var unreachable: [String]
    /// The tail fetched, or nil when this node was the most advanced.
    public var fetched: Fetched?
    /// Whether `--force` let it go on without a majority.
    public var forced: Bool
    /// How long the promotion took, in milliseconds.
    public var tookMs: Int64

    /// An answer from its parts.
    public init(
        term: Int64, seq: Int64, voters: [String], promised: [String], unreachable: [String], fetched: Fetched?, forced: Bool,
        tookMs: Int64
    ) {
        self.term = term
        self.seq = seq
        self.voters = voters
        self.promised = promised
        self.unreachable = unreachable
        self.fetched = fetched
        self.forced = forced
        self.tookMs = tookMs
    }

    /// The answer as sent, members in the order of Docs/API.md.
    public var jsonValue: JSONValue {
        nodeJSONObject([
            "promoted": true, "term": term, "seq": seq, "voters": voters, "promised": promised, "unreachable": unreachable,
            "fetched": fetched, "forced": forced, "tookMs": tookMs,
        ])
    }

    /// Reads an answer; a member missing or of the wrong type is named.
    public init(json: JSONValue) throws(NodeJSONError) {
        let f = try NodeJSONFields(json)
        guard try f.decode("promoted", as: Bool.self) else { throw NodeJSONError(path: "promoted", "expected true") }
        term = try f.decode("term")
        seq = try f.decode("seq")
        voters = try f.decodeArray("voters")
        promised = try f.decodeArray("promised")
        unreachable = try f.decodeArray("unreachable")
        fetched = try f.decodeIfPresent("fetched")
        forced = try f.decode("forced")
        tookMs = try f.decode("tookMs")
    }

    /// One line per fact, as `ordersync promote` prints them.
    public var lines: [String] {
        [
            "promoted:    term \(term), seq \(seq)\(forced ? " (forced)" : "")",
            "voters:      \(Self.list(voters))",
            "promised:    \(Self.list(promised))",
            "unreachable: \(Self.list(unreachable))",
            "fetched:     \(fetched.map { "\($0.entries) entries from \($0.from)" } ?? "nothing (this node was the most current)")",
            "took:        \(tookMs) ms",
        ]
    }

    /// Names, comma-separated, or `-`.
    static func list(_ names: [String]) -> String { names.isEmpty ? "-" : names.joined(separator: ", ") }
}

/// Why a promotion did not happen, as `POST /v1/promote` answers it (409):
/// `{"error":{"code":..,"message":..,"unreachable":[..],"voters":[..],"promised":[..]}}`.
public struct PromoteRefusal: Error, Equatable, Sendable {
    /// The refusals a promotion knows.
    public enum Code: String, Sendable, CaseIterable {
        /// Fewer than a majority of voters promised by the deadline (and no `--force`).
        case noMajority = "no_majority"
        /// The node is not a slave (a master, or a candidate already).
        case notASlave = "not_a_slave"
        /// The slave never received the store's members from its master: it cannot serve.
        case noStandbyCopy = "no_standby_copy"
        /// A promotion is already running on this node.
        case promoting
    }

    /// What refused it.
    public var code: Code
    /// What happened, for people.
    public var message: String
    /// The voters that did not answer (no majority).
    public var unreachable: [String]
    /// Every voter (no majority).
    public var voters: [String]
    /// The voters that promised (no majority).
    public var promised: [String]

    /// A refusal from its parts.
    public init(_ code: Code, message: String, unreachable: [String] = [], voters: [String] = [], promised: [String] = []) {
        self.code = code
        self.message = message
        self.unreachable = unreachable
        self.voters = voters
        self.promised = promised
    }

    /// The HTTP status it is answered with.
    public var httpStatus: Int { code == .promoting ? 503 : 409 }

    /// `{"error":{...}}`.
    public var jsonValue: JSONValue {
        var e = JSONObject()
        e["code"] = .string(code.rawValue)
        e["message"] = .string(message)
        if code == .noMajority {
            e["unreachable"] = unreachable.jsonValue
            e["voters"] = voters.jsonValue
            e["promised"] = promised.jsonValue
        }
        return .object(JSONObject([("error", .object(e))]))
    }

    /// The lines `ordersync promote` prints for a refusal it was answered with (`error`, the
    /// `error` object of the answer).
    public static func lines(_ error: JSONObject) -> [String] {
        let code = error["code"]?.stringValue ?? "unknown"
        var lines = ["refused:     \(error["message"]?.stringValue ?? "the promotion was refused") [\(code)]"]
        for key in ["voters", "promised", "unreachable"] {
            guard let names = error[key]?.arrayValue?.compactMap(\.stringValue) else { continue }
            lines.append("\(key + ":")\(String(repeating: " ", count: max(1, 13 - key.count - 1)))\(PromoteAnswer.list(names))")
        }
        return lines
    }
}
