import JSON
import SyncCore

/// A local API request only a master answers: pairing, paired terminals and the master's key
/// (Docs/API.md). Pure. A slave answers these paths 404 `not_master`.
///
/// `POST /v1/pairing` (`{"name": "till-3", "validForSeconds": 600, "voter": false}`, all optional),
/// `GET /v1/pairing`, `DELETE /v1/pairing`, `DELETE /v1/pairing/{code-or-name}`, `GET /v1/terminals`, `POST /v1/terminals/{id-or-name}/revoke`,
/// `POST /v1/key/rotate`, `POST /v1/dashboard/tokens` (`{"name": "office"}`, optional),
/// `GET /v1/dashboard/tokens`, `POST /v1/dashboard/tokens/{id-or-name}/revoke`,
/// `GET /v1/storepos/foreign`, `POST /v1/storepos/foreign/adopt` and `POST /v1/storepos/foreign/clear`
/// (`{"uuids": [...]}` or `{"all": true}`).
public enum MasterAPIRoute: Equatable {
    /// Opens one more pairing window (the open ones stay open); `voter` false: the terminal
    /// pairing with it does not vote in a promotion (a handheld).
    case openPairing(name: String?, validForSeconds: Int, voter: Bool = true)
    /// The open pairing codes.
    case pairingCodes
    /// Closes every pairing window.
    case closePairing
    /// Closes the pairing windows whose code or name this is.
    case cancelPairing(String)
    /// The paired terminals.
    case terminals
    /// Revokes the paired terminal with this node id or name.
    case revokeTerminal(String)
    /// Makes a new master key; the current one becomes the previous one.
    case rotateKey
    /// Makes a dashboard token with this label (nil: a default one).
    case makeDashboardToken(name: String?)
    /// The dashboard tokens (without their secrets).
    case dashboardTokens
    /// Revokes the dashboard token with this id or label.
    case revokeDashboardToken(String)
    /// The orders StorePOS apps hold that the store does not (`ForeignOrder`).
    case foreignOrders
    /// Brings these foreign orders (nil: every one waiting) into the store.
    case adoptForeignOrders([String]?)
    /// Clears these foreign orders (nil: every one waiting) from the StorePOS apps.
    case clearForeignOrders([String]?)

    /// The route for `method` and `path`, a failure for a malformed request to one of these
    /// paths, or nil when the path is not one of them (a `LocalAPIRoute` then).
    /// `segments` are the path's segments, each decoded on its own (`HTTPRequest.pathSegments`),
    /// so a terminal name holding `/` (sent as `%2F`) stays one segment; without them, `path`
    /// is split.
    public static func decode(method: String, path: String, segments: [String]? = nil, body: [UInt8]) -> Result<
        MasterAPIRoute, LocalAPIRoute.Failure
    >? {
        let parts = segments ?? path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        let roots = ["pairing", "terminals", "key", "dashboard", "storepos"]
        guard parts.count >= 2, parts[0] == "v1", roots.contains(parts[1]) else { return nil }
        func notAllowed() -> Result<MasterAPIRoute, LocalAPIRoute.Failure> {
            .failure(.init(status: 405, code: "method_not_allowed", message: "\(method) is not allowed on \(path)"))
        }
        switch Array(parts.dropFirst()) {
        case ["pairing"]:
            switch method {
            case "POST": return openPairing(body)
            case "GET": return .success(.pairingCodes)
            case "DELETE": return .success(.closePairing)
            default: return notAllowed()
            }
        case let p where p.count == 2 && p[0] == "pairing" && !p[1].isEmpty:
            return method == "DELETE" ? .success(.cancelPairing(p[1])) : notAllowed()
        case ["terminals"]:
            return method == "GET" ? .success(.terminals) : notAllowed()
        case let p where p.count == 3 && p[0] == "terminals" && p[2] == "revoke" && !p[1].isEmpty:
            return method == "POST" ? .success(.revokeTerminal(p[1])) : notAllowed()
        case ["key", "rotate"]:
            return method == "POST" ? .success(.rotateKey) : notAllowed()
        case ["dashboard", "tokens"]:
            switch method {
            case "GET": return .success(.dashboardTokens)
            case "POST":
                return namedObject(body).flatMap { o in
                    // A label is a path segment of the revocation: no '/'.
                    guard !(o.name?.contains("/") ?? false) else {
                        return .failure(.init(status: 400, code: "invalid_field", message: "'name' must not contain '/'"))
                    }
                    return .success(.makeDashboardToken(name: o.name))
                }
            default: return notAllowed()
            }
        case let p where p.count == 4 && p[0] == "dashboard" && p[1] == "tokens" && p[3] == "revoke" && !p[2].isEmpty:
            return method == "POST" ? .success(.revokeDashboardToken(p[2])) : notAllowed()
        case ["storepos", "foreign"]:
            return method == "GET" ? .success(.foreignOrders) : notAllowed()
        case ["storepos", "foreign", "adopt"]:
            return method == "POST" ? foreignSelection(body).map { .adoptForeignOrders($0) } : notAllowed()
        case ["storepos", "foreign", "clear"]:
            return method == "POST" ? foreignSelection(body).map { .clearForeignOrders($0) } : notAllowed()
        default:
            return .failure(.init(status: 404, code: "no_route", message: "unknown path \(path)"))
        }
    }

    /// `POST /v1/pairing`: an empty body, or an object with an optional `name` (1-63 bytes) and
    /// `validForSeconds` (1-600, default 600).
    private static func openPairing(_ body: [UInt8]) -> Result<MasterAPIRoute, LocalAPIRoute.Failure> {
        namedObject(body).flatMap { (object, name) in
            var seconds = PairingWindows.maxValidSeconds
            switch object["validForSeconds"] {
            case nil, .null?: break
            case let value?:
                guard let n = value.intValue, (1...Int64(PairingWindows.maxValidSeconds)).contains(n) else {
                    return .failure(
                        .init(
                            status: 400, code: "invalid_field",
                            message: "'validForSeconds' must be an integer in 1...\(PairingWindows.maxValidSeconds)"))
                }
                seconds = Int(n)
            }
            switch object["voter"] {
            case nil, .null?, .bool?: break
            default: return .failure(.init(status: 400, code: "invalid_field", message: "'voter' must be true or false"))
            }
            return .success(.openPairing(name: name, validForSeconds: seconds, voter: object["voter"] != .bool(false)))
        }
    }

    /// `{"uuids": ["…", …]}` (1-10000 UUIDs) or `{"all": true}`: the foreign orders to act on
    /// (nil: all of them).
    private static func foreignSelection(_ body: [UInt8]) -> Result<[String]?, LocalAPIRoute.Failure> {
        jsonObject(body).flatMap { object in
            switch (object["uuids"], object["all"]) {
            case (nil, .bool(true)?):
                return .success(nil)
            case (.array(let list)?, nil) where (1...10_000).contains(list.count),
                (.array(let list)?, .bool(false)?) where (1...10_000).contains(list.count):
                let uuids = list.compactMap(\.stringValue)
                guard uuids.count == list.count, uuids.allSatisfy(Order.isValidUUID) else {
                    return .failure(.init(status: 400, code: "invalid_uuid", message: "'uuids' must hold UUIDs only"))
                }
                return .success(uuids)
            default:
                return .failure(
                    .init(
                        status: 400, code: "invalid_message",
                        message: "send {\"uuids\": [1-10000 UUIDs]} or {\"all\": true} (as `ordersync storepos foreign` lists them)"))
            }
        }
    }

    /// A body that is a JSON object.
    private static func jsonObject(_ body: [UInt8]) -> Result<JSONObject, LocalAPIRoute.Failure> {
        do {
            guard let o = try JSONParser.parse(body).objectValue else {
                return .failure(.init(status: 400, code: "invalid_message", message: "request body must be a JSON object"))
            }
            return .success(o)
        } catch {
            return .failure(.init(status: 400, code: "malformed_json", message: "request body is not valid JSON: \(error)"))
        }
    }

    /// A body that is empty or a JSON object with an optional `name` (1-63 bytes). A name over 63
    /// bytes is a field too large (`413 too_large`, as an order's field over its bound is): the
    /// document can bound only characters, and 20 four-byte characters are 80 bytes.
    private static func namedObject(_ body: [UInt8]) -> Result<(object: JSONObject, name: String?), LocalAPIRoute.Failure> {
        guard !body.isEmpty else { return .success((JSONObject(), nil)) }
        return jsonObject(body).flatMap { object in
            switch object["name"] {
            case nil, .null?: return .success((object, nil))
            case .string(let n)? where !n.isEmpty && n.utf8.count <= 63: return .success((object, n))
            case .string(let n)? where n.utf8.count > 63:
                return .failure(.init(status: 413, code: "too_large", message: "'name' is \(n.utf8.count) bytes; at most 63"))
            default: return .failure(.init(status: 400, code: "invalid_field", message: "'name' must be a string of 1-63 bytes"))
            }
        }
    }
}
