import JSON

/// `POST /v1/promote` (`{"force": bool}`, the body optional): a running slave asked to become
/// the store's master (`ordersync promote`; Docs/PROTOCOL.md, "Promotion"). Pure. The answer
/// comes when the promotion is over: a ``PromotionReport`` (200, or 409 with its ballot), or a ``PromoteRefusal`` (409).
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

/// Names, comma-separated, or `-` (the lines `ordersync promote` prints).
func promoteList(_ names: [String]) -> String { names.isEmpty ? "-" : names.joined(separator: ", ") }

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
        /// A forced candidate withdrew: a voter promised or follows another node in a term at
        /// least as high (Docs/PROTOCOL.md 7.9; the election answers it, `ordersync promote`
        /// exits 1 as for the others).
        case rivalCandidate = "rival_candidate"
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
            lines.append("\(key + ":")\(String(repeating: " ", count: max(1, 13 - key.count - 1)))\(promoteList(names))")
        }
        return lines
    }
}
