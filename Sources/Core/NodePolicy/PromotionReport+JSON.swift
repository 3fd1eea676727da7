import JSON
import SyncCore

// `POST /v1/promote` as JSON (design.md, "Promotion"). Promoted:
//   {"promoted":true,"term":T,"seq":S,"voters":[..],"promised":[..],"unreachable":[..],
//    "refused":[{"name":..,"reason":..}],"fetched":{"from":..,"entries":n}|null,"forced":b,"tookMs":n}
// Refused (HTTP 409), the local API's error shape with the ballot beside code and message when
// there was one (no_majority, fetch_failed):
//   {"error":{"code":..,"message":..,"term":T,"voters":[..],"promised":[..],"unreachable":[..],
//    "refused":[..],"forced":b,"tookMs":n}}

extension PromotionReport.Refusal.Code: NodeJSONCodable {}

extension PromotionReport: NodeJSONCodable {
    /// The answer, promoted or refused.
    public var jsonValue: JSONValue {
        guard let refusal else {
            return nodeJSONObject([
                "promoted": true, "term": term, "seq": seq, "voters": voters, "promised": promised, "unreachable": unreachable,
                "refused": refused, "fetched": fetched, "forced": forced, "tookMs": tookMs,
            ])
        }
        var error = JSONObject([("code", refusal.code.jsonValue), ("message", .string(refusal.message))])
        if hasBallot {
            for (key, value) in ballotMembers { error[key] = value }
        }
        return .object(JSONObject([("error", .object(error))]))
    }

    /// True for a refusal that counted votes (a term was bid for).
    private var hasBallot: Bool { term > 0 }

    /// The members of a refused ballot, after `code` and `message`.
    private var ballotMembers: [(String, JSONValue)] {
        [
            ("term", .int(term)), ("voters", voters.jsonValue), ("promised", promised.jsonValue),
            ("unreachable", unreachable.jsonValue), ("refused", refused.jsonValue), ("forced", .bool(forced)),
            ("tookMs", .int(tookMs)),
        ]
    }

    /// Either answer.
    public init(json: JSONValue) throws(NodeJSONError) {
        let f = try NodeJSONFields(json)
        if let errorValue = f.object["error"] {
            let e = try NodeJSONFields(errorValue, at: "error")
            let refusal = Refusal(try e.decode("code"), try e.decode("message"))
            guard e.object["term"] != nil else {
                self = .refused(refusal.code, refusal.message)
                return
            }
            self.init(
                term: try e.decode("term"), seq: 0, voters: try e.decodeArray("voters"), promised: try e.decodeArray("promised"),
                unreachable: try e.decodeArray("unreachable"), refused: try e.decodeArray("refused"), forced: try e.decode("forced"),
                tookMs: try e.decode("tookMs"), refusal: refusal)
            return
        }
        guard try f.decode("promoted", as: Bool.self) else {
            throw NodeJSONError(path: f.path(of: "promoted"), "a refused promotion answers with \"error\"")
        }
        self.init(
            term: try f.decode("term"), seq: try f.decode("seq"), voters: try f.decodeArray("voters"),
            promised: try f.decodeArray("promised"), unreachable: try f.decodeArray("unreachable"),
            refused: try f.decodeArray("refused"), fetched: try f.decodeIfPresent("fetched"), forced: try f.decode("forced"),
            tookMs: try f.decode("tookMs"))
    }
}

extension PromotionReport.Fetched: NodeJSONCodable {
    /// `{"from":..,"entries":n}`.
    public var jsonValue: JSONValue { nodeJSONObject(["from": from, "entries": entries]) }

    /// A fetch.
    public init(json: JSONValue) throws(NodeJSONError) {
        let f = try NodeJSONFields(json)
        self.init(from: try f.decode("from"), entries: try f.decode("entries"))
    }
}

extension PromotionReport.RefusedVote: NodeJSONCodable {
    /// `{"name":..,"reason":..}`.
    public var jsonValue: JSONValue { nodeJSONObject(["name": name, "reason": reason]) }

    /// A refused vote.
    public init(json: JSONValue) throws(NodeJSONError) {
        let f = try NodeJSONFields(json)
        self.init(name: try f.decode("name"), reason: try f.decode("reason"))
    }
}
