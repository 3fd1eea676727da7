import HTTP1
import JSON

/// The HTTP conventions of the local API around one request (Docs/API.md, "HTTP conventions").
/// Pure: the server asks it what to refuse before routing, how to narrow the route (`If-Match`),
/// and which headers (and, for a failed precondition, which status) the answer gets.
public struct LocalAPIExchange {
    /// The method the routes see: `HEAD` is answered as `GET`, without the body.
    public let method: String
    /// The request was `HEAD`.
    public let isHead: Bool
    /// The request's path, without its query.
    public let path: String
    /// The request's `If-Match`, once read.
    private(set) var ifMatch: IfMatch?

    /// `If-Match` (RFC 9110 13.1.1) as the API reads it: `*`, or entity tags `"v<version>"`.
    enum IfMatch: Equatable {
        /// `*`: any current order.
        case any
        /// The order must be at this version (a tag that no order has is `Int64.max`).
        case version(Int64)
    }

    /// The exchange of `request`, before its headers are checked.
    public init(_ request: HTTPRequest) {
        isHead = request.method == "HEAD"
        method = isHead ? "GET" : request.method
        path = request.path
    }

    /// The methods a path answers, for `Allow` on 405; nil for a path that is not the API's.
    public static func allowedMethods(path: String) -> [String]? {
        let p = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard p.first == "v1" else { return nil }
        switch Array(p.dropFirst()) {
        case ["status"], ["journal"], ["rejections"], ["terminals"], ["storepos", "foreign"]: return ["GET", "HEAD"]
        case ["dashboard", "tokens"]: return ["GET", "HEAD", "POST"]
        case let t where t.count == 4 && t[0] == "dashboard" && t[1] == "tokens" && t[3] == "revoke": return ["POST"]
        case ["orders"]: return ["GET", "HEAD", "POST"]
        case let o where o.count == 2 && o[0] == "orders": return ["GET", "HEAD", "PATCH", "DELETE"]
        case ["operations"], ["key", "rotate"], ["storepos", "foreign", "adopt"], ["storepos", "foreign", "clear"]: return ["POST"]
        case ["promote"]: return ["POST"]
        case ["pairing"]: return ["GET", "HEAD", "POST", "DELETE"]
        case let t where t.count == 2 && t[0] == "pairing": return ["DELETE"]
        case let t where t.count == 3 && t[0] == "terminals" && t[2] == "revoke": return ["POST"]
        default: return nil
        }
    }

    /// Checks what must hold before the request is routed: a body is JSON (`415` otherwise),
    /// `If-Match` is readable. Reads `If-Match`.
    public mutating func check(_ request: HTTPRequest) -> LocalAPIRoute.Failure? {
        if !request.body.isEmpty, let refusal = Self.checkContentType(request.headers["Content-Type"]) { return refusal }
        let tags = request.headers.values("If-Match")
        guard !tags.isEmpty else { return nil }
        switch Self.parseIfMatch(tags.joined(separator: ",")) {
        case .success(let m): ifMatch = m
        case .failure(let f): return f
        }
        return nil
    }

    /// `application/json`, with or without `charset=utf-8`; anything else is 415.
    static func checkContentType(_ value: String?) -> LocalAPIRoute.Failure? {
        let refusal = LocalAPIRoute.Failure(
            status: 415, code: "unsupported_media_type",
            message: "a request body must be JSON: send it with Content-Type: application/json (charset utf-8)")
        guard let value else { return refusal }
        let parts = value.split(separator: ";").map { $0.trimmed.lowercased() }
        guard parts.first == "application/json" else { return refusal }
        for parameter in parts.dropFirst() where !parameter.isEmpty {
            let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmed.trimmingQuotes }
            guard pair.count == 2, pair[0] == "charset", pair[1] == "utf-8" else { return refusal }
        }
        return nil
    }

    /// `*`, or a list of entity tags of which one at most names a version (`"v3"`); other tags
    /// (weak ones, tags the API never makes) match no order.
    static func parseIfMatch(_ value: String) -> Result<IfMatch, LocalAPIRoute.Failure> {
        func invalid(_ why: String) -> Result<IfMatch, LocalAPIRoute.Failure> {
            .failure(.init(status: 400, code: "invalid_header", message: "If-Match: \(why)"))
        }
        let elements = Self.listElements(value).map { String($0.trimmed) }.filter { !$0.isEmpty }
        if elements == ["*"] { return .success(.any) }
        var versions: Set<Int64> = []
        for e in elements {
            let strong = !e.hasPrefix("W/")
            let tag = strong ? Substring(e) : e.dropFirst(2)
            // RFC 9110 8.8.3: entity-tag = [ weak ] DQUOTE *etagc DQUOTE; etagc = %x21 / %x23-7E
            // (obs-text is not taken here).
            let opaque = tag.count >= 2 ? tag.dropFirst().dropLast() : ""
            guard tag.count >= 2, tag.first == "\"", tag.last == "\"",
                opaque.utf8.allSatisfy({ $0 == 0x21 || (0x23...0x7E).contains($0) })
            else {
                return invalid("'\(e)' is not an entity tag: send \"*\" or the order's ETag, e.g. \"v3\" with its quotes")
            }
            if strong, opaque.first == "v", let n = Int64(opaque.dropFirst()), n >= 1 { versions.insert(n) }
        }
        guard !elements.isEmpty else { return invalid("empty") }
        guard versions.count <= 1 else { return invalid("name one version of the order, not several") }
        return .success(.version(versions.first ?? Int64.max))
    }

    /// The elements of a comma-separated list whose elements may be quoted (RFC 9110 8.8.3: an
    /// entity tag's opaque-tag may hold commas: `etagc = %x21 / %x23-7E / obs-text`), split at
    /// the commas outside double quotes.
    static func listElements(_ value: String) -> [Substring] {
        var elements: [Substring] = []
        var start = value.startIndex
        var quoted = false
        for index in value.indices {
            switch value[index] {
            case "\"":
                quoted.toggle()
            case "," where !quoted:
                elements.append(value[start..<index])
                start = value.index(after: index)
            default:
                break
            }
        }
        elements.append(value[start...])
        return elements
    }

    /// The route with `If-Match` applied: an Update or Remove of one order based on that
    /// version. `If-Match` on anything else is refused. A `version` in the body that differs
    /// from it is a well-formed request whose two preconditions cannot both hold: it is based on
    /// a version no order has, so it meets a conflict, answered `412 precondition_failed` with
    /// the order as it is (RFC 9110 13.1.1: If-Match is false when no current representation
    /// matches).
    public func narrowing(_ route: LocalAPIRoute) -> Result<LocalAPIRoute, LocalAPIRoute.Failure> {
        guard let ifMatch else { return .success(route) }
        guard case .write(var message, let single?) = route, message.operation != .create, var order = message.orders.first?.objectValue
        else {
            return .failure(
                .init(status: 400, code: "invalid_header", message: "If-Match applies only to PATCH and DELETE of /v1/orders/{uuid}"))
        }
        guard case .version(let v) = ifMatch else { return .success(route) }
        if let given = order["version"], given != .null, given != .int(v) {
            order["version"] = .int(Int64.max)
        } else {
            order["version"] = .int(v)
        }
        message.orders[0] = .object(order)
        return .success(.write(message, single: single))
    }

    /// The answer as it is sent: `Allow` on 405; `ETag` on an order, `Location` on 201; a
    /// `conflict` of a request with `If-Match` becomes `412 precondition_failed` (with the
    /// current order and its `ETag`).
    public func answer(status: Int, body: [UInt8]) -> (status: Int, headers: [(String, String)], body: [UInt8]) {
        var headers: [(String, String)] = []
        if status == 405, let allowed = Self.allowedMethods(path: path) {
            headers.append(("Allow", allowed.joined(separator: ", ")))
        }
        if status == 201, path == "/v1/pairing" || path == "/v1/dashboard/tokens" { headers.append(("Location", path)) }
        let orderPath = path.hasPrefix("/v1/orders/") || (path == "/v1/orders" && method == "POST")
        guard orderPath, (200..<300).contains(status) || (ifMatch != nil && status == 409), method != "DELETE" || status == 409,
            let object = try? JSONParser.parse(body).objectValue
        else { return (status, headers, body) }
        if status == 409 {
            guard case .object(var error)? = object["error"], error["code"] == .string("conflict") else { return (status, headers, body) }
            error["code"] = .string("precondition_failed")
            error["message"] = .string("If-Match does not match the order: " + (error["message"]?.stringValue ?? ""))
            if let etag = Self.etag(of: error["current"]?.objectValue) { headers.append(("ETag", etag)) }
            return (412, headers, JSONValue.object(JSONObject([("error", .object(error))])).serializedBytes())
        }
        guard let etag = Self.etag(of: object) else { return (status, headers, body) }
        headers.append(("ETag", etag))
        if status == 201, let uuid = object["uuid"]?.stringValue { headers.append(("Location", "/v1/orders/\(uuid)")) }
        return (status, headers, body)
    }

    /// `"v<version>"`: a strong entity tag (RFC 9110 8.8.3) from the order's version.
    static func etag(of order: JSONObject?) -> String? {
        guard let order, order["uuid"] != nil, let v = order["version"]?.intValue else { return nil }
        return "\"v\(v)\""
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs (HTTP's OWS).
    fileprivate var trimmed: Substring {
        let s = self[...]
        guard let first = s.firstIndex(where: { $0 != " " && $0 != "\t" }),
            let last = s.lastIndex(where: { $0 != " " && $0 != "\t" })
        else { return Substring() }
        return Substring(s[first...last])
    }

    /// Without the double quotes of a quoted-string.
    fileprivate var trimmingQuotes: Substring {
        let s = Substring(self)
        return s.count >= 2 && s.first == "\"" && s.last == "\"" ? s.dropFirst().dropLast() : s
    }
}
