import EventLoopIO
import Foundation
import HTTP1
import JSON
import Logging
import NodePolicy
import SyncCore
import TLS

/// What the dashboard shows, answered by the master on its loop.
protocol DashboardSource: AnyObject {
    /// The id of the dashboard token whose secret is `secret`; nil: no such token.
    func dashboardTokenId(secret: String) -> String?
    /// A read of the local API (status, orders, one order, rejections): status and JSON body.
    func dashboardRead(_ route: LocalAPIRoute) -> (status: Int, body: [UInt8])
    /// A journal search (newest first): status and JSON body.
    func dashboardJournal(_ query: DashboardJournalQuery) -> (status: Int, body: [UInt8])
    /// Hands a change feed request to the master's feed (Docs/API.md, "Change feed").
    func dashboardChanges(_ request: ChangesRequest, _ sink: ChangesSink)
}

/// `GET /api/journal`'s filters: an order, a terminal (part of the origin), a time range
/// (milliseconds since 1970, `from` included, `to` not), entries before a seq (paging).
struct DashboardJournalQuery: Equatable {
    var order: String?
    var terminal: String?
    var fromMillis: Int64?
    var toMillis: Int64?
    var beforeSeq: Int64?
    var limit = 100
}

/// `--http-listen ADDR:PORT`: the store dashboard (Docs/OPERATIONS.md, "The store dashboard").
/// A read-only page served from the binary, and its data behind a login: a dashboard token
/// (`ordersync dashboard`) is exchanged at `POST /api/session` for an HttpOnly, SameSite=Strict
/// session cookie, or sent as `Authorization: Bearer TOKEN`. Every data endpoint answers 401
/// without one; revoking a token ends its sessions and closes its event streams at once.
/// Served over TLS (a self-signed certificate, `DashboardCertificate`) unless it listens on
/// loopback or `--http-tls off`; connections are bounded by ``HTTPListenerLimits/standard``.
final class DashboardServer {
    /// A request head up to 8 KiB and a body up to 1 KiB (the login's token).
    static let limits = HTTPRequestParser.Limits(maxHeaderBytes: 8 << 10, maxBodyBytes: 1 << 10)
    static let cookieName = "ordersync_session"
    /// Most sessions kept at once.
    static let maxSessions = 1000
    /// How long a session lasts after the login.
    static let sessionLifetime: Duration = .seconds(12 * 3600)
    /// Seconds between status events on the event streams (terminals up or away).
    static let statusInterval: Duration = .seconds(2)
    /// An event stream whose reader leaves this much unread is closed (it reconnects).
    static let streamBacklogLimit = 4 << 20

    private struct Session {
        var tokenId: String
        var expires: MonotonicInstant
    }

    private struct EventStream {
        var tokenId: String
        var channel: StreamChannel
        /// A change feed stream (`/api/changes`): the feed writes to it, not the dashboard.
        var feed = false
    }

    private let loop: EventLoop
    private let logger: Logger
    private let listener: HTTPListener
    private weak var source: DashboardSource?
    private var sessions: [String: Session] = [:]
    private var streams: [ObjectIdentifier: EventStream] = [:]
    private var statusTimer: TimerHandle?
    private var lastRefusals = 0
    /// The certificate's SHA-256 (`AB:CD:...`) when the dashboard is served over TLS.
    let tlsFingerprint: String?
    /// The address actually bound (`ip:port`).
    var localAddress: String { listener.localAddress }

    /// Binds `address` (`--http-listen`), or explains why not (``StartupPorts/dashboard(_:_:)``).
    static func bind(_ address: MetricsAddress) throws -> TCPListener {
        try HTTPListener.bind(address, flag: "--http-listen", purpose: "the dashboard")
    }

    /// Serves `bound` (its socket, over TLS when it has a context) on `loop`; nothing is
    /// answered before `start(source:)`.
    init(bound: StartupPorts.Dashboard, loop: EventLoop, logger: Logger) throws {
        self.loop = loop
        self.logger = logger
        tlsFingerprint = bound.fingerprint
        listener = try HTTPListener(
            listener: bound.listener, requestLimits: Self.limits,
            limits: .standard, tls: bound.tls, loop: loop,
            acceptFailed: { error in logger.warning("dashboard.accept_failed", metadata: ["error": "\(error)"]) },
            refused: { peer, reason, count in
                logger.notice(
                    "dashboard.connection_refused", metadata: ["peer.address": "\(peer)", "reason": "\(reason)", "count": "\(count)"])
            })
    }

    /// `https` over TLS, else `http`.
    var scheme: String { listener.isTLS ? "https" : "http" }

    /// Serves the page and its data from `source` (a master), or, with nil (a slave), the page
    /// and `503 standby` for its data: the terminal serves the dashboard once promoted. Called
    /// again by the next role on the same node (``FrontEnds``), the listener stays.
    func start(source: DashboardSource?) {
        self.source = source
        listener.start { [weak self] request, client in
            guard let self else { return .response(HTTPListener.plain(503, "stopping\n")) }
            return self.answer(request, client)
        }
    }

    /// The role serving the dashboard leaves for another on the same node (a promotion, a
    /// step-down): its sessions end and its streams and connections close (an open page
    /// reconnects and logs in with the next role's tokens); the socket keeps listening.
    func withdraw() {
        source = nil
        sessions.removeAll()
        if let t = statusTimer { loop.cancel(t) }
        statusTimer = nil
        for s in streams.values { s.channel.close() }
        streams.removeAll()
        listener.closeConnections()
    }

    /// Closes every stream and connection.
    func stop() {
        if let t = statusTimer { loop.cancel(t) }
        statusTimer = nil
        for s in streams.values { s.channel.close() }
        streams.removeAll()
        listener.stop()
    }

    /// A token was revoked: its sessions end and its event streams close now.
    func revoked(tokenId: String) {
        sessions = sessions.filter { $0.value.tokenId != tokenId }
        for (id, s) in streams where s.tokenId == tokenId {
            streams[id] = nil
            // The page shows its login form at once instead of reconnecting to a 401.
            if !s.feed { s.channel.write(Array("event: revoked\ndata: {}\n\n".utf8)) }
            s.channel.closeAfterFlush()
        }
    }

    /// A group is on disk with `refusals` operations refused since the start. Applied changes
    /// reach the page through the change feed (`/api/changes`); a refusal is not a change, so
    /// when their number moved every open page is told to reload its refused operations.
    func committed(refusals: Int) {
        guard refusals != lastRefusals else { return }
        lastRefusals = refusals
        broadcast("event: refusals\ndata: {\"refused\":\(refusals)}\n\n")
    }

    /// Open event streams, for tests and status.
    var streamCount: Int { streams.count }

    // MARK: Requests

    private func answer(_ request: HTTPRequest, _ client: HTTPListenerClient) -> HTTPListener.Answer {
        let path = request.path
        if let asset = DashboardPage.asset(path) {
            guard request.method == "GET" else { return .response(notAllowed("GET")) }
            return .response(
                Self.secured(
                    HTTPResponse(
                        status: 200, headers: HTTPHeaders([("Content-Type", asset.type), ("Cache-Control", "no-cache")]),
                        body: asset.body)))
        }
        guard source != nil || !path.hasPrefix("/api/") else {
            return .response(
                Self.error(
                    503, "standby",
                    "this terminal is a standby (a slave): the store dashboard is served by the master; "
                        + "this terminal serves it here once it is promoted"))
        }
        if path == "/api/session" {
            switch request.method {
            case "POST": return .response(login(request, from: client.peerAddress))
            case "DELETE": return .response(logout(request))
            default: return .response(notAllowed("POST, DELETE"))
            }
        }
        guard path.hasPrefix("/api/") else {
            return .response(Self.error(404, "not_found", "unknown path \(path)"))
        }
        guard let tokenId = authenticated(request) else {
            return .response(Self.error(401, "unauthorized", "log in with a dashboard token (`ordersync dashboard` makes one)"))
        }
        guard request.method == "GET" else { return .response(notAllowed("GET")) }
        guard let source else { return .response(Self.error(503, "starting", "the master is starting")) }
        switch path {
        case "/api/events":
            openStream(client.channel, tokenId: tokenId)
            return .stream
        case "/api/changes":
            switch ChangesRequest.decode(method: "GET", path: ChangesRequest.path, query: request.query, headers: request.headers) {
            case .failure(let f)?: return .response(Self.error(f.status, f.code, f.message))
            case .success(let r)?:
                followChanges(r, client.channel, tokenId: tokenId, source: source)
                return .stream
            case nil: return .response(Self.error(404, "not_found", "unknown path \(path)"))
            }
        case "/api/journal":
            switch Self.journalQuery(request.query) {
            case .failure(let f): return .response(Self.error(f.status, f.code, f.message))
            case .success(let q): return .response(Self.json(source.dashboardJournal(q)))
            }
        default:
            let apiPath = "/v1/" + path.dropFirst("/api/".count)
            switch LocalAPIRoute.decode(method: "GET", path: apiPath, query: request.query, body: []) {
            case .failure(let f): return .response(Self.error(f.status, f.code, f.message))
            case .success(let route):
                switch route {
                case .status, .list, .show, .rejections: return .response(Self.json(source.dashboardRead(route)))
                case .journal, .write: return .response(Self.error(404, "not_found", "unknown path \(path)"))
                }
            }
        }
    }

    /// The token id of the request's session cookie or bearer token.
    private func authenticated(_ request: HTTPRequest) -> String? {
        if let auth = request.headers["Authorization"], auth.lowercased().hasPrefix("bearer ") {
            return source?.dashboardTokenId(secret: String(auth.dropFirst("bearer ".count)).trimmingCharacters(in: .whitespaces))
        }
        guard let id = Self.cookie(Self.cookieName, in: request.headers["Cookie"]), let s = sessions[id] else { return nil }
        guard s.expires > loop.now else {
            sessions[id] = nil
            return nil
        }
        return s.tokenId
    }

    /// `POST /api/session` with `{"token":"..."}`: a session cookie for a valid token.
    private func login(_ request: HTTPRequest, from peer: String) -> HTTPResponse {
        if let origin = request.headers["Origin"], let host = request.headers["Host"], origin != "\(scheme)://\(host)" {
            return Self.error(403, "forbidden", "log in from the dashboard's own page")
        }
        guard let type = request.headers["Content-Type"], type.lowercased().hasPrefix("application/json") else {
            return Self.error(415, "unsupported_media_type", "send {\"token\": \"...\"} as application/json")
        }
        guard let object = try? JSONParser.parse(request.body).objectValue, let secret = object["token"]?.stringValue else {
            return Self.error(400, "invalid_message", "send {\"token\": \"...\"}")
        }
        guard let tokenId = source?.dashboardTokenId(secret: secret.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            logger.notice("dashboard.login_refused", metadata: ["peer.address": "\(peer)"])
            return Self.error(401, "unauthorized", "this token is not valid (revoked, or mistyped)")
        }
        sessions = sessions.filter { $0.value.expires > loop.now }
        // Bounded: past the limit the session closest to its end goes first.
        while sessions.count >= Self.maxSessions, let oldest = sessions.min(by: { $0.value.expires < $1.value.expires }) {
            sessions[oldest.key] = nil
        }
        let id = DashboardTokens.hex((0..<32).map { _ in UInt8.random(in: .min ... .max) })
        sessions[id] = Session(tokenId: tokenId, expires: loop.now + Self.sessionLifetime)
        logger.info("dashboard.login", metadata: ["token": "\(tokenId)", "peer.address": "\(peer)"])
        let seconds = Self.sessionLifetime.components.seconds
        return Self.secured(
            HTTPResponse(
                status: 204,
                headers: HTTPHeaders([
                    ("Set-Cookie", "\(Self.cookieName)=\(id); Path=/; HttpOnly; SameSite=Strict; Max-Age=\(seconds)\(cookieSecure)"),
                    ("Cache-Control", "no-store"),
                ]), body: []))
    }

    /// `DELETE /api/session`: the session ends.
    private func logout(_ request: HTTPRequest) -> HTTPResponse {
        if let id = Self.cookie(Self.cookieName, in: request.headers["Cookie"]) { sessions[id] = nil }
        return Self.secured(
            HTTPResponse(
                status: 204,
                headers: HTTPHeaders([("Set-Cookie", "\(Self.cookieName)=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0\(cookieSecure)")]),
                body: []))
    }

    /// RFC 6265 4.1.2.5: "The Secure attribute limits the scope of the cookie to "secure"
    /// channels": under TLS the browser never sends the session over plain HTTP.
    private var cookieSecure: String { listener.isTLS ? "; Secure" : "" }

    // MARK: Event streams

    private func openStream(_ channel: StreamChannel, tokenId: String) {
        var head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nCache-Control: no-store\r\nConnection: close\r\n"
        for (k, v) in Self.securityHeaders { head += "\(k): \(v)\r\n" }
        head += "\r\nretry: 2000\n\n"
        channel.write(Array(head.utf8))
        let id = ObjectIdentifier(channel)
        streams[id] = EventStream(tokenId: tokenId, channel: channel)
        let previous = channel.onClose
        channel.onClose = { [weak self] reason in
            previous?(reason)
            self?.streams[id] = nil
        }
        sendStatus(to: [channel])
        if statusTimer == nil { scheduleStatus() }
    }

    /// `GET /api/changes`: the master's change feed on this connection (a JSON answer, a
    /// long-poll or server-sent events), closed with the token's other streams when it is revoked.
    private func followChanges(_ r: ChangesRequest, _ channel: StreamChannel, tokenId: String, source: DashboardSource) {
        let sink = ChangesSink(channel: channel, keepAlive: false) {}
        let id = ObjectIdentifier(channel)
        streams[id] = EventStream(tokenId: tokenId, channel: channel, feed: true)
        let previous = channel.onClose
        channel.onClose = { [weak self] reason in
            previous?(reason)
            sink.closed()
            self?.streams[id] = nil
        }
        source.dashboardChanges(r, sink)
    }

    private func scheduleStatus() {
        statusTimer = loop.schedule(after: Self.statusInterval) { [weak self] in
            guard let self else { return }
            self.statusTimer = nil
            guard self.streams.values.contains(where: { !$0.feed }) else { return }
            self.sendStatus(to: self.streams.values.filter { !$0.feed }.map(\.channel))
            self.scheduleStatus()
        }
    }

    private func sendStatus(to channels: [StreamChannel]) {
        guard let source else { return }
        let status = source.dashboardRead(.status)
        guard status.status == 200 else { return }
        let text = "event: status\ndata: " + String(decoding: status.body.filter { $0 != 0x0A }, as: UTF8.self) + "\n\n"
        for c in channels { write(text, to: c) }
    }

    private func broadcast(_ text: String) {
        for s in streams.values where !s.feed { write(text, to: s.channel) }
    }

    private func write(_ text: String, to channel: StreamChannel) {
        guard channel.pendingBytes < Self.streamBacklogLimit else {
            channel.close()
            return
        }
        channel.write(Array(text.utf8))
    }

    // MARK: Answers

    /// Sent with every answer: no framing, no sniffing, no referrer, nothing from elsewhere.
    static let securityHeaders = [
        ("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"),
        ("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "no-referrer"), ("X-Frame-Options", "DENY"),
    ]

    static func secured(_ response: HTTPResponse) -> HTTPResponse {
        var r = response
        for (k, v) in securityHeaders { r.headers.add(name: k, value: v) }
        return r
    }

    static func json(_ answer: (status: Int, body: [UInt8])) -> HTTPResponse {
        secured(
            HTTPResponse(
                status: answer.status, headers: HTTPHeaders([("Content-Type", "application/json"), ("Cache-Control", "no-store")]),
                body: answer.body))
    }

    static func error(_ status: Int, _ code: String, _ message: String) -> HTTPResponse {
        json((status, LocalAPIRoute.errorBody(code: code, message: message).serializedBytes() + [0x0A]))
    }

    private func notAllowed(_ allow: String) -> HTTPResponse {
        var r = Self.error(405, "method_not_allowed", "allowed here: \(allow)")
        r.headers.add(name: "Allow", value: allow)
        return r
    }
}
