import EventLoopIO
import Foundation
import HTTP1
import JSON
import Logging
import NodePolicy
import SyncCore

/// The local API: HTTP/1.1 + JSON on a Unix domain socket in the data directory. Each request
/// is decoded into a `LocalAPIRoute` and handed to the node; the node answers through the
/// `respond` closure, possibly later (a slave waits for its master).
final class LocalAPIServer {
    typealias Respond = LocalAPIResponder
    typealias Handler = (LocalAPIRoute, Respond) -> Void
    typealias MasterHandler = (MasterAPIRoute, Respond) -> Void

    private let loop: EventLoop
    private let logger: Logger
    private let path: String
    private var acceptor: Acceptor?
    private var clients: [ObjectIdentifier: APIClientConnection] = [:]
    var handler: Handler = { _, respond in respond(503, LocalAPIRoute.errorBody(code: "starting", message: "node is starting")) }
    /// Answers the master's own routes (pairing, terminals, key); nil on a slave.
    var masterHandler: MasterHandler?
    /// Answers `POST /v1/promote` (a slave's); nil on a master, which answers `not_a_slave`.
    var promoteHandler: ((PromoteRequest, Respond) -> Void)?
    /// Renders `GET /metrics` (the Prometheus text exposition); nil until the node starts.
    var metrics: (() -> [UInt8])?
    /// Answers `GET /v1/changes` (the change feed, LocalAPIServer+Changes.swift).
    var changesHandler: ((ChangesRequest, ChangesSink) -> Void)?

    init(loop: EventLoop, path: String, logger: Logger) {
        self.loop = loop
        self.path = path
        self.logger = logger
    }

    /// Checks the socket's directory (see `PrivateDirectory.check`), binds the socket (mode
    /// 0660) and starts accepting.
    func start() throws {
        try PrivateDirectory.check(PrivateDirectory.parent(of: path), what: "local API socket directory")
        let l = try UnixListener.bind(path: path, mode: 0o660)
        acceptor = try Acceptor(listener: l, loop: loop) { [weak self] accepted in self?.accepted(accepted) }
        acceptor?.onError = { [weak self] error in
            self?.logger.warning("api.accept_failed", metadata: ["error": "\(error)"])
        }
    }

    /// Stops accepting, closes every client and removes the socket file.
    func stop() {
        if let a = acceptor {
            a.close()
            unlink(path)
        }
        acceptor = nil
        for c in clients.values { c.channel.close() }
        clients.removeAll()
    }

    private func accepted(_ a: AcceptedSocket) {
        loop.assertInEventLoop()
        let channel: StreamChannel
        do { channel = try StreamChannel(socket: a.socket, loop: loop) } catch {
            logger.warning("api.accept_failed", metadata: ["error": "\(error)"])
            return
        }
        // The uid of whoever connected, as the kernel saw it at connect(2): the journal names it.
        // An answer the client stops taking is cut as a close is (5 s without a byte, 120 s in
        // all), on a keep-alive connection too: logged as `api.answer_cut`.
        channel.boundsPendingWrites = true
        let client = APIClientConnection(channel: channel, caller: LocalAPICaller(uid: try? channel.peerCredentials().uid))
        let id = ObjectIdentifier(client)
        clients[id] = client
        channel.onRead = { [weak self, weak client] bytes in
            guard let self = self, let client = client else { return }
            self.receive(bytes, from: client)
        }
        channel.onClose = { [weak self, weak client] reason in
            if let t = client?.deadline { self?.loop.cancel(t) }
            client?.changes?.closed()
            self?.clients[id] = nil
            self?.logCut(reason)
        }
    }

    /// How long a request may take from its first byte to its last.
    static let requestTimeout: Duration = .seconds(10)

    private func receive(_ bytes: [UInt8], from client: APIClientConnection) {
        loop.assertInEventLoop()
        client.parser.append(bytes)
        drain(client)
        watchDeadline(client)
    }

    /// A client that starts a request and stalls is answered 408 and closed, so it cannot hold
    /// a connection (and its buffer) for ever.
    func watchDeadline(_ client: APIClientConnection) {
        if client.busy || client.parser.bufferedByteCount == 0 {
            if let t = client.deadline { loop.cancel(t) }
            client.deadline = nil
            return
        }
        guard client.deadline == nil else { return }
        client.deadline = loop.schedule(after: Self.requestTimeout) { [weak client] in
            guard let client = client, !client.busy else { return }
            client.deadline = nil
            let body = LocalAPIRoute.errorBody(
                code: "request_timeout",
                message: "the request did not arrive completely within \(Int(Self.requestTimeout.seconds)) s")
            client.channel.write(
                HTTPResponse(
                    status: 408, headers: HTTPHeaders([("Content-Type", "application/json"), ("Connection", "close")]),
                    body: body.serializedBytes()
                ).serialize())
            client.channel.closeAfterFlush()
        }
    }

    /// Handles requests one at a time per connection, in order.
    func drain(_ client: APIClientConnection) {
        while !client.busy {
            let request: HTTPRequest?
            do {
                request = try client.parser.nextRequest()
            } catch let e as HTTPError {
                let code: String
                switch e.status {
                case 413, 431: code = "too_large"
                case 501: code = "not_implemented"
                case 505: code = "http_version_not_supported"
                default: code = "bad_request"
                }
                let body = LocalAPIRoute.errorBody(code: code, message: e.message)
                client.channel.write(
                    HTTPResponse(
                        status: e.status, headers: HTTPHeaders([("Content-Type", "application/json"), ("Connection", "close")]),
                        body: body.serializedBytes()
                    ).serialize())
                client.channel.closeAfterFlush()
                return
            } catch {
                client.channel.close()
                return
            }
            guard let req = request else { return }
            if req.path == "/metrics" {
                // The Prometheus exposition, as text: answered at once, in order.
                let response =
                    metrics.map { MetricsExposition.response(to: req, render: $0) }
                    ?? MetricsExposition.plain(503, "the node is starting\n")
                client.channel.write(MetricsExposition.wire(response, to: req))
                guard req.keepAlive else {
                    client.channel.closeAfterFlush()
                    return
                }
                continue
            }
            client.busy = true
            let keepAlive = req.keepAlive
            if let changes = ChangesRequest.decode(method: req.method, path: req.path, query: req.query, headers: req.headers) {
                serveChanges(changes, client: client, keepAlive: keepAlive, head: req.method == "HEAD")
                continue
            }
            var exchange = LocalAPIExchange(req)
            let refusal = exchange.check(req)
            let respond = LocalAPIResponder(caller: client.caller) { [weak self, weak client, exchange] status, body in
                guard let self = self, let client = client, client.busy else { return }
                let answer = exchange.answer(status: status, body: body)
                var headers = [("Content-Type", "application/json")] + answer.headers
                if !keepAlive { headers.append(("Connection", "close")) }
                let response = HTTPResponse(status: answer.status, headers: HTTPHeaders(headers), body: answer.body + [0x0A])
                client.channel.write(response.serialize(omittingBody: exchange.isHead))
                client.busy = false
                if keepAlive {
                    self.drain(client)
                    self.watchDeadline(client)
                } else {
                    client.channel.closeAfterFlush()
                }
            }
            if let refusal {
                respond(refusal.status, LocalAPIRoute.errorBody(code: refusal.code, message: refusal.message))
                continue
            }
            route(req, exchange, respond)
        }
    }

    /// Hands a request to the master's routes or the node's (`HEAD` as `GET`).
    private func route(_ req: HTTPRequest, _ exchange: LocalAPIExchange, _ respond: Respond) {
        if let promote = PromoteRequest.decode(method: exchange.method, path: req.path, body: req.body) {
            routePromote(promote, respond)
            return
        }
        if let masterRoute = MasterAPIRoute.decode(method: exchange.method, path: req.path, segments: req.pathSegments, body: req.body) {
            switch masterRoute {
            case .failure(let f):
                respond(f.status, LocalAPIRoute.errorBody(code: f.code, message: f.message))
            case .success(let r):
                if let masterHandler {
                    masterHandler(r, respond)
                } else {
                    respond(
                        404,
                        LocalAPIRoute.errorBody(
                            code: "not_master",
                            message: "this node is a slave; pairing, terminals and keys are managed on the master"))
                }
            }
            return
        }
        switch LocalAPIRoute.decode(method: exchange.method, path: req.path, query: req.query, body: req.body).flatMap(exchange.narrowing) {
        case .failure(let f):
            respond(f.status, LocalAPIRoute.errorBody(code: f.code, message: f.message, uuid: f.uuid))
        case .success(let r):
            handler(r, respond)
        }
    }
}

extension LocalAPIServer {
    /// Hands `POST /v1/promote` to the slave, or refuses it: a master is not a slave.
    fileprivate func routePromote(_ promote: Result<PromoteRequest, LocalAPIRoute.Failure>, _ respond: Respond) {
        switch promote {
        case .failure(let f):
            respond(f.status, LocalAPIRoute.errorBody(code: f.code, message: f.message))
        case .success(let request):
            guard let promoteHandler else {
                let refusal = PromoteRefusal(.notASlave, message: "this node is not a slave: only a running slave can be promoted")
                respond(refusal.httpStatus, refusal.jsonValue)
                return
            }
            promoteHandler(request, respond)
        }
    }
}

extension LocalAPIServer {
    /// An answer the reader did not take in time (``StreamChannel/closeTimeout`` without a byte
    /// taken, or ``StreamChannel/closeLimit`` in all) or left over the send buffer is cut: the
    /// client sees the connection end before the answer is complete, the log says why.
    fileprivate func logCut(_ reason: StreamChannel.CloseReason) {
        switch reason {
        case .error(let error) where error.errno == ETIMEDOUT:
            logger.warning("api.answer_cut", metadata: ["reason": "\(reason)"])
        case .sendBufferOverflow:
            logger.warning("api.answer_cut", metadata: ["reason": "\(reason)"])
        case .error, .endOfFile, .localClose:
            return
        }
    }
}

/// One connection to the local API.
final class APIClientConnection {
    let channel: StreamChannel
    let caller: LocalAPICaller
    var parser = HTTPRequestParser()
    var busy = false
    var deadline: TimerHandle?
    /// The change feed request this connection waits on or streams, if any.
    var changes: ChangesSink?

    init(channel: StreamChannel, caller: LocalAPICaller) {
        self.channel = channel
        self.caller = caller
    }
}

/// Who sent a local API request: the user id the kernel reports for the connecting process
/// (`SO_PEERCRED`), nil if it could not be read.
struct LocalAPICaller: Equatable {
    /// The caller's effective user id.
    var uid: uid_t?

    /// The journal origin of an operation submitted through the API of the node named `node`:
    /// `NAME (local API, uid 1000)`.
    func origin(node: String) -> String {
        uid.map { "\(node) (local API, uid \($0))" } ?? "\(node) (local API)"
    }
}

/// Answers one local API request, once: a JSON value, or a typed value encoded as JSON.
struct LocalAPIResponder {
    /// Who sent the request.
    var caller = LocalAPICaller(uid: nil)
    /// Writes the HTTP response with this status and JSON body.
    let send: (_ status: Int, _ body: [UInt8]) -> Void

    /// Answers with a JSON value.
    func callAsFunction(_ status: Int, _ body: JSONValue) {
        send(status, body.serializedBytes())
    }

    /// Answers with a typed value (a node's status) as JSON.
    func encoded(_ status: Int, _ value: some NodeJSONCodable) {
        send(status, value.jsonValue.serializedBytes())
    }
}
