import JSON
import SyncCore

/// A local API request, decoded from method, path, query and body. Pure.
///
/// Routes (Docs/API.md):
/// `GET /v1/status`, `GET /v1/orders?page=P&per=N&status=S&sort=created|-created`, `GET /v1/orders/{uuid}`,
/// `POST /v1/orders`, `PATCH /v1/orders/{uuid}`, `DELETE /v1/orders/{uuid}`,
/// `POST /v1/operations` (a StorePOS message, several orders at once).
public enum LocalAPIRoute: Equatable {
    case status
    /// The master's journal: applied operations after `since`, optionally of one order.
    case journal(since: Int64, order: String?, limit: Int)
    /// Refused operations recorded by the master.
    case rejections(since: Int64, order: String?, limit: Int)
    /// A page of orders, oldest first (`sort=created`, the default) or newest first
    /// (`sort=-created`), optionally of one status.
    case list(page: Int, per: Int, status: OrderStatus?, newestFirst: Bool = false)
    case show(uuid: String)
    /// A write. `single` is the UUID of the one order a REST call is about.
    case write(OperationMessage, single: String?)

    /// An error answer: HTTP status, code, message.
    public struct Failure: Error, Equatable {
        /// The HTTP status.
        public var status: Int
        /// The error code of the body (`invalid_query`, `no_route`, ...).
        public var code: String
        /// What went wrong, for people.
        public var message: String
        /// The order the error is about, if any.
        public var uuid: String?

        /// A failure from its parts.
        public init(status: Int, code: String, message: String, uuid: String? = nil) {
            self.status = status
            self.code = code
            self.message = message
            self.uuid = uuid
        }
    }

    /// The route of a request, or the error answer for it.
    public static func decode(method: String, path: String, query: [(String, String)], body: [UInt8]) -> Result<LocalAPIRoute, Failure> {
        let parts = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        func queryInt(_ name: String, _ def: Int, _ range: ClosedRange<Int>) -> Result<Int, Failure> {
            guard let raw = query.last(where: { $0.0 == name })?.1 else { return .success(def) }
            guard let n = Int(raw), range.contains(n) else {
                return .failure(
                    Failure(
                        status: 400, code: "invalid_query",
                        message: "'\(name)' must be an integer in \(range.lowerBound)...\(range.upperBound)"))
            }
            return .success(n)
        }
        func bodyObject() -> Result<JSONObject, Failure> {
            guard !body.isEmpty else { return .failure(emptyBody) }
            do {
                guard let o = try JSONParser.parse(body).objectValue else {
                    return .failure(Failure(status: 400, code: "invalid_message", message: "request body must be a JSON object"))
                }
                return .success(o)
            } catch {
                return .failure(Failure(status: 400, code: "malformed_json", message: "request body is not valid JSON: \(error)"))
            }
        }
        func checkUUID(_ u: String) -> Failure? {
            Order.isValidUUID(u) ? nil : Failure(status: 400, code: "invalid_uuid", message: "'\(u)' is not a UUID")
        }
        let emptyBody = Failure(
            status: 400, code: "empty_body", message: "\(method) \(path) needs a JSON body (Content-Type: application/json)")
        guard parts.first == "v1" else {
            return .failure(Failure(status: 404, code: "no_route", message: "unknown path \(path); the API lives under /v1"))
        }
        switch (method, Array(parts.dropFirst())) {
        case ("GET", ["status"]):
            return .success(.status)
        case ("GET", let p) where p == ["journal"] || p == ["rejections"]:
            var order: String?
            if let o = query.last(where: { $0.0 == "order" })?.1 {
                if let f = checkUUID(o) { return .failure(f) }
                order = o
            }
            let rejected = p == ["rejections"]
            return queryInt("since", 0, 0...Int.max).flatMap { since in
                queryInt("limit", 100, 1...10_000).map {
                    rejected
                        ? .rejections(since: Int64(since), order: order, limit: $0)
                        : .journal(since: Int64(since), order: order, limit: $0)
                }
            }
        case ("GET", ["orders"]):
            var status: OrderStatus?
            if let raw = query.last(where: { $0.0 == "status" })?.1 {
                guard let s = OrderStatus(rawValue: raw) else {
                    return .failure(Failure(status: 400, code: "invalid_query", message: "'status' must be one of \(OrderStatus.names)"))
                }
                status = s
            }
            var newestFirst = false
            if let raw = query.last(where: { $0.0 == "sort" })?.1 {
                guard raw == "created" || raw == "-created" else {
                    return .failure(
                        Failure(
                            status: 400, code: "invalid_query",
                            message: "'sort' must be 'created' (oldest first) or '-created' (newest first)"))
                }
                newestFirst = raw == "-created"
            }
            return queryInt("page", 1, 1...1_000_000).flatMap { page in
                queryInt("per", 50, 1...1000).map { .list(page: page, per: $0, status: status, newestFirst: newestFirst) }
            }
        case ("GET", let p) where p.count == 2 && p[0] == "orders":
            if let f = checkUUID(p[1]) { return .failure(f) }
            return .success(.show(uuid: p[1]))
        case ("POST", ["orders"]):
            return bodyObject().flatMap { o in
                var order = o
                guard case .string? = order["uuid"] else {
                    return .failure(
                        Failure(status: 400, code: "invalid_uuid", message: "the order needs a \"uuid\" string (the CLI makes one for you)")
                    )
                }
                if order["customerName"] == nil { order["customerName"] = .string("") }
                let id = order["uuid"]?.stringValue
                return .success(.write(OperationMessage(operation: .create, orders: [.object(order)]), single: id))
            }
        case ("PATCH", let p) where p.count == 2 && p[0] == "orders":
            if let f = checkUUID(p[1]) { return .failure(f) }
            return bodyObject().map { o in
                var order = o
                order["uuid"] = .string(p[1])
                return .write(OperationMessage(operation: .update, orders: [.object(order)]), single: p[1])
            }
        case ("DELETE", let p) where p.count == 2 && p[0] == "orders":
            if let f = checkUUID(p[1]) { return .failure(f) }
            return .success(
                .write(OperationMessage(operation: .remove, orders: [.object(JSONObject([("uuid", .string(p[1]))]))]), single: p[1]))
        case ("POST", ["operations"]):
            guard !body.isEmpty else { return .failure(emptyBody) }
            switch ClientMessage.decode(String(decoding: body, as: UTF8.self)) {
            case .success(.operation(let m)): return .success(.write(m, single: nil))
            case .success(.hello), .success(.ack):
                return .failure(Failure(status: 400, code: "invalid_message", message: "expected an operation message"))
            case .failure(let e): return .failure(Failure(status: 400, code: e.code.rawValue, message: e.message))
            }
        case _ where LocalAPIExchange.allowedMethods(path: path) != nil:
            return .failure(Failure(status: 405, code: "method_not_allowed", message: "\(method) is not allowed on \(path)"))
        default:
            return .failure(Failure(status: 404, code: "no_route", message: "unknown path \(path)"))
        }
    }

    /// HTTP status for a wire error code.
    public static func httpStatus(for code: WireErrorCode) -> Int {
        switch code {
        case .malformedJSON, .invalidMessage, .unknownOperation, .invalidUUID, .invalidField: return 400
        case .notFound: return 404
        case .alreadyExists, .invalidTransition, .conflict: return 409
        case .removed: return 410
        case .tooLarge, .orderTooLarge: return 413
        case .rateLimited: return 429
        case .wrongStore: return 409
        case .storageFailed: return 500
        }
    }

    /// `{"error":{"code":..,"message":..,"uuid":..}}`.
    public static func errorBody(code: String, message: String, uuid: String? = nil, current: Order? = nil) -> JSONValue {
        var e = JSONObject()
        e["code"] = .string(code)
        e["message"] = .string(message)
        if let u = uuid { e["uuid"] = .string(u) }
        if let c = current { e["current"] = .object(c.json) }
        return .object(JSONObject([("error", .object(e))]))
    }

    /// The answer to a write, once its outcome is known: one order for REST calls, a summary for
    /// `/v1/operations`.
    public static func writeAnswer(
        single: String?, operation: OperationKind, applied: [Order], unchanged: [Order],
        errors: [WireError], seq: Int64?,
        decorate: (Order) -> JSONObject = { $0.json }
    ) -> (status: Int, body: JSONValue) {
        if single != nil {
            if let e = errors.first {
                return (httpStatus(for: e.code), errorBody(code: e.code.rawValue, message: e.message, uuid: e.uuid, current: e.current))
            }
            if let o = applied.last ?? unchanged.last {
                return (operation == .create && !applied.isEmpty ? 201 : 200, .object(decorate(o)))
            }
            return (500, errorBody(code: "internal", message: "no outcome for the operation"))
        }
        var o = JSONObject()
        o["seq"] = seq.map { .int($0) } ?? .null
        o["applied"] = .array(applied.map { .object(decorate($0)) })
        o["unchanged"] = .array(unchanged.map { .object(decorate($0)) })
        o["errors"] = .array(
            errors.map { e in
                var x = JSONObject()
                x["code"] = .string(e.code.rawValue)
                x["message"] = .string(e.message)
                if let u = e.uuid { x["uuid"] = .string(u) }
                if let i = e.index { x["index"] = .int(Int64(i)) }
                if let c = e.current { x["current"] = .object(c.json) }
                return .object(x)
            })
        return (200, .object(o))
    }

    /// `{"entries":[...]}` for the journal.
    public static func journalBody(_ entries: [JournalEntry]) -> JSONValue {
        .object(
            JSONObject([
                (
                    "entries",
                    .array(
                        entries.map { e in
                            var o = JSONObject()
                            o["seq"] = .int(e.seq)
                            o["at"] = .string(OrderTimestamp(epochMillis: e.recordedAtMillis).storePOSText)
                            o["origin"] = .string(e.origin)
                            o["operation"] = .string(e.operation.description)
                            o["orders"] = .array(e.orderUUIDs.map { .string($0) })
                            o["opId"] = e.opId.map { .string($0) } ?? .null
                            o["result"] = .string("applied")
                            return .object(o)
                        })
                )
            ]))
    }

    /// `{"rejections":[...]}`.
    public static func rejectionsBody(_ list: [Rejection]) -> JSONValue {
        .object(
            JSONObject([
                (
                    "rejections",
                    .array(
                        list.map { r in
                            var o = JSONObject()
                            o["id"] = .int(r.id)
                            o["at"] = .string(OrderTimestamp(epochMillis: r.recordedAtMillis).storePOSText)
                            o["origin"] = .string(r.origin)
                            o["operation"] = r.operation.map { .string($0.description) } ?? .null
                            o["order"] = r.orderUUID.map { .string($0) } ?? .null
                            o["opId"] = r.opId.map { .string($0) } ?? .null
                            o["code"] = .string(r.code.rawValue)
                            o["message"] = .string(r.message)
                            return .object(o)
                        })
                )
            ]))
    }

    /// `{"page","per","total","orders"}`.
    public static func listBody(page: Int, per: Int, total: Int, orders: [Order]) -> JSONValue {
        listBody(page: page, per: per, total: total, orders: orders.map(\.json))
    }

    /// `{"page","per","total","orders"}` from order objects as they are shown.
    public static func listBody(page: Int, per: Int, total: Int, orders: [JSONObject]) -> JSONValue {
        .object(
            JSONObject([
                ("page", .int(Int64(page))), ("per", .int(Int64(per))), ("total", .int(Int64(total))),
                ("orders", .array(orders.map { .object($0) })),
            ]))
    }
}
