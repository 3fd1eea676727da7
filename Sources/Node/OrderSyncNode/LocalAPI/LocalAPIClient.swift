import EventLoopIO
import Foundation
import HTTP1
import JSON
import NodePolicy
import OrderStore
import SyncCore

/// Why the CLI could not talk to a daemon.
public enum LocalAPIClientError: Error, CustomStringConvertible {
    /// Nothing listens on the data directory's socket.
    case noDaemon(dataDirectory: String)
    /// The daemon answered with something that is not an HTTP response with JSON.
    case badResponse(String)
    /// The daemon did not answer in time.
    case timeout(seconds: Int)
    /// No order store exists in the directory either.
    case noStore(dataDirectory: String)
    /// The daemon or the store answered with an explained refusal.
    case refused(String)
    /// The socket, the database or the directory exists but this user may not use it.
    case permissionDenied(path: String, owner: FileOwner)
    /// The data directory does not exist.
    case noDataDirectory(String)
    /// The daemon answered with an API error (`{"error":{"code","message"}}`).
    case apiError(status: Int, code: String, message: String)

    /// The error a non-success answer carries.
    public static func answer(_ r: LocalAPIResponse) -> LocalAPIClientError {
        let err = r.body.objectValue?["error"]?.objectValue
        return .apiError(
            status: r.status, code: err?["code"]?.stringValue ?? "http_\(r.status)",
            message: err?["message"]?.stringValue ?? "request failed with HTTP \(r.status)")
    }

    public var description: String {
        switch self {
        case .noDaemon(let dir):
            return "no ordersync daemon is running for \(dir). Start one with `ordersync master --data-dir \(dir)` "
                + "or `ordersync slave --data-dir \(dir)`."
        case .badResponse(let why):
            return "the daemon gave an unreadable answer: \(why)"
        case .timeout(let s):
            return "the daemon did not answer within \(s) s"
        case .refused(let why):
            return why
        case .permissionDenied(let path, let owner):
            return "permission denied on \(path) (run as a member of group \(owner.group) or as the service user \(owner.user))"
        case .apiError(_, let code, let message):
            return "\(message) [\(code)]"
        case .noDataDirectory(let dir):
            return "the data directory \(dir) does not exist. Check --data-dir (or ORDERSYNC_DATA_DIR)."
        case .noStore(let dir):
            return "no ordersync daemon is running for \(dir), and it holds no order store (\(NodeDefaults.databaseFile)). "
                + "Check --data-dir, or start a node there."
        }
    }
}

/// An answer from the local API.
public struct LocalAPIResponse {
    /// HTTP status.
    public var status: Int
    /// Parsed JSON body (`null` when empty).
    public var body: JSONValue
}

/// A blocking client of the local API, for the CLI.
public struct LocalAPIClient {
    let dataDirectory: String
    /// How long the client waits for the daemon to take or answer the request.
    let timeout: Duration

    /// A client for the daemon of `dataDirectory`.
    public init(dataDirectory: String, timeout: Duration = LocalAPIClient.defaultTimeout) {
        self.dataDirectory = dataDirectory
        self.timeout = timeout
    }

    var socketPath: String { (dataDirectory as NSString).appendingPathComponent(NodeDefaults.socketFile) }

    /// How long the CLI waits for the daemon.
    public static let defaultTimeout: Duration = .seconds(30)

    /// Sends one request and waits (at most `timeout`) for the answer.
    public func send(method: String, path: String, body: JSONValue? = nil) throws -> LocalAPIResponse {
        let (status, bytes) = try exchange(method: method, path: path, body: body)
        let json: JSONValue
        if bytes.isEmpty {
            json = .null
        } else {
            do { json = try JSONParser.parse(bytes) } catch {
                throw LocalAPIClientError.badResponse("body is not JSON: \(error)")
            }
        }
        return LocalAPIResponse(status: status, body: json)
    }

    /// `GET /metrics`: the Prometheus text exposition (Docs/OPERATIONS.md, "Metrics").
    public func metrics() throws -> String {
        let (status, bytes) = try exchange(method: "GET", path: "/metrics", body: nil)
        guard status == 200 else { throw LocalAPIClientError.badResponse("GET /metrics answered \(status)") }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `GET /v1/status`, decoded into the typed value the node encoded.
    public func status() throws -> NodeStatus {
        let (status, bytes) = try exchange(method: "GET", path: "/v1/status", body: nil)
        guard status == 200 else { throw LocalAPIClientError.badResponse("status answered HTTP \(status)") }
        do {
            return try NodeStatus(jsonBytes: bytes)
        } catch {
            throw LocalAPIClientError.badResponse("status is not a node status: \(error)")
        }
    }

    /// Sends one request; the answer's HTTP status and raw body.
    private func exchange(method: String, path: String, body: JSONValue?) throws -> (status: Int, body: [UInt8]) {
        let socket: Socket
        do {
            socket = try UnixSocket.connectBlocking(path: socketPath)
        } catch let e as PosixError where e.errno == EACCES || e.errno == EPERM {
            try FileOwner.requireDirectory(dataDirectory)
            throw LocalAPIClientError.permissionDenied(path: socketPath, owner: FileOwner(of: socketPath, orOf: dataDirectory))
        } catch {
            try FileOwner.requireDirectory(dataDirectory)
            throw LocalAPIClientError.noDaemon(dataDirectory: dataDirectory)
        }
        defer { socket.close() }
        let payload = body?.serializedBytes() ?? []
        var head = "\(method) \(path) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: \(payload.count)\r\n"
        if !payload.isEmpty { head += "Content-Type: application/json\r\n" }
        head += "\r\n"
        do {
            try socket.writeAll(Array(head.utf8) + payload, timeout: timeout)
        } catch {
            throw LocalAPIClientError.noDaemon(dataDirectory: dataDirectory)
        }
        var parser = HTTPResponseParser()
        while true {
            let chunk: [UInt8]
            do {
                chunk = try socket.readSome(maxBytes: 65_536, timeout: timeout)
            } catch let e as PosixError where e.errno == ETIMEDOUT {
                throw LocalAPIClientError.timeout(seconds: Int(timeout.seconds))
            } catch {
                throw LocalAPIClientError.badResponse("\(error)")
            }
            parser.append(chunk)
            do {
                if let r = try (chunk.isEmpty ? parser.finish() : parser.nextResponse()) {
                    return (r.status, r.body)
                }
            } catch {
                throw LocalAPIClientError.badResponse("\(error)")
            }
            if chunk.isEmpty { throw LocalAPIClientError.badResponse("connection closed before a full response") }
        }
    }
}

/// `order list` and `order show`: through the daemon when one runs, else straight from the
/// SQLite file, read-only.
public enum OrderReader {
    /// `{"page","per","total","orders"}`.
    public static func list(dataDirectory: String, page: Int, per: Int, status: OrderStatus? = nil) throws -> JSONValue {
        do {
            let filter = status.map { "&status=\($0.rawValue)" } ?? ""
            let r = try LocalAPIClient(dataDirectory: dataDirectory).send(
                method: "GET", path: "/v1/orders?page=\(page)&per=\(per)\(filter)")
            if r.status == 200 { return r.body }
            throw LocalAPIClientError.answer(r)
        } catch LocalAPIClientError.noDaemon {
            return try OfflineStore.read(dataDirectory) { db in
                let r = try db.orders(page: page, per: per, status: status)
                let show = try OfflineStore.view(db)
                return LocalAPIRoute.listBody(page: page, per: per, total: r.total, orders: r.orders.map(show))
            }
        }
    }

    /// The order, or nil when there is none with that UUID.
    public static func show(dataDirectory: String, uuid: String) throws -> JSONObject? {
        do {
            let r = try LocalAPIClient(dataDirectory: dataDirectory).send(method: "GET", path: "/v1/orders/\(uuid)")
            if r.status == 404 { return nil }
            if r.status == 200 { return r.body.objectValue }
            throw LocalAPIClientError.answer(r)
        } catch LocalAPIClientError.noDaemon {
            return try OfflineStore.read(dataDirectory) { db in try db.order(uuid: uuid).map(try OfflineStore.view(db)) }
        }
    }

    /// The journal (`{"entries":[...]}`): through the daemon, else from the file.
    public static func journal(
        dataDirectory: String, since: Int64, order: String?, limit: Int,
        rejected: Bool = false
    ) throws -> JSONValue {
        var path = "/v1/\(rejected ? "rejections" : "journal")?since=\(since)&limit=\(limit)"
        if let o = order { path += "&order=\(o)" }
        do {
            let r = try LocalAPIClient(dataDirectory: dataDirectory).send(method: "GET", path: path)
            if r.status == 200 { return r.body }
            throw LocalAPIClientError.answer(r)
        } catch LocalAPIClientError.noDaemon {
            return try OfflineStore.read(dataDirectory) { db in
                if !rejected, try db.metadata("node.role") == "slave" {
                    throw LocalAPIClientError.refused("\(dataDirectory) holds a slave's replica; the journal is kept by the master")
                }
                if rejected {
                    return LocalAPIRoute.rejectionsBody(try db.rejections(since: since, orderUUID: order, limit: limit))
                }
                return LocalAPIRoute.journalBody(try db.journal(since: since, orderUUID: order, limit: limit))
            }
        }
    }
}

/// Text helpers for the CLI.
public enum OrderText {
    /// Quotes a value for a `key=value` line when it needs it.
    public static func quote(_ s: String) -> String {
        if !s.isEmpty, !s.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" || $0.isNewline }) { return s }
        return JSONValue.string(s).serialized()
    }
}
