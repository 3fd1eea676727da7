import EventLoopIO
import HTTP1
import NodePolicy
import TLS

/// An HTTP/1.1 listener on TCP, on the node's loop: `--metrics-listen` and the master's
/// `--http-listen` (the dashboard), in plain HTTP or over TLS. Requests are bounded (head and
/// body limits), answered in order, one at a time per connection; what each path answers is
/// the handler's. Connections are bounded by ``HTTPListenerLimits``: a cap in all and per
/// address, a deadline for each request to arrive and one for idling between requests.
final class HTTPListener {
    /// What a handler makes of one request: an answer now, or `.stream` when it took the
    /// connection over (a stream of server-sent events): the listener then reads no further
    /// request from it and sets no deadline; the handler writes and closes.
    enum Answer {
        case response(HTTPResponse)
        case stream
    }

    typealias Handler = (HTTPRequest, HTTPListenerClient) -> Answer

    private let loop: EventLoop
    /// Reports a failed `accept` (the owner logs it under its own event name).
    private let acceptFailed: (any Error) -> Void
    /// Reports refused connections, at most one line per minute: the first of a streak in
    /// full (`count` 1), then how many since the last line.
    private let refused: (_ peer: String, _ reason: String, _ count: Int) -> Void
    private let requestLimits: HTTPRequestParser.Limits
    /// Connections in all and per address, and their deadlines.
    let limits: HTTPListenerLimits
    /// TLS for every connection; nil: plain HTTP.
    private let tls: TLSContext?
    private var admission: HTTPAdmission
    private var refusals = FailureSummary(interval: .seconds(60))
    private let started = MonotonicInstant.now
    private var handler: Handler = { _, _ in .response(HTTPListener.plain(503, "starting\n")) }
    private let acceptor: Acceptor
    private var clients: [ObjectIdentifier: HTTPListenerClient] = [:]
    /// The address actually bound (`ip:port`).
    let localAddress: String

    /// Binds `address` for `purpose`, or explains why not: a `NodeStartupError` naming `flag`,
    /// of the listen's kind (a port in use, permission denied, an address this host lacks).
    static func bind(_ address: MetricsAddress, flag: String, purpose: String) throws -> TCPListener {
        do {
            return try TCPListener.bind(host: address.host, port: address.port, backlog: 64)
        } catch {
            let failure = StartupFailure.ofListen(error)
            throw NodeStartupError(
                "cannot listen for \(purpose) on \(address) (\(flag)): \(error)", failure: failure,
                fix: failure == .portInUse ? "stop the other program on port \(address.port), or choose another port in \(flag)" : nil)
        }
    }

    /// Serves `listener` (bound by ``bind(_:flag:purpose:)``) on `loop` (on its thread);
    /// connections wait in the backlog until `start(handler:)`. With `tls`, every connection is
    /// TLS (a plain HTTP request is answered with a redirect to https).
    init(
        listener: TCPListener, requestLimits: HTTPRequestParser.Limits,
        limits: HTTPListenerLimits, tls: TLSContext? = nil, loop: EventLoop,
        acceptFailed: @escaping (any Error) -> Void,
        refused: @escaping (_ peer: String, _ reason: String, _ count: Int) -> Void
    ) throws {
        self.loop = loop
        self.acceptFailed = acceptFailed
        self.refused = refused
        self.requestLimits = requestLimits
        self.limits = limits
        self.tls = tls
        admission = HTTPAdmission(limits: limits)
        localAddress = listener.localAddress
        acceptor = try Acceptor(listener: listener, loop: loop) { accepted in accepted.socket.close() }
    }

    /// `true` when connections are TLS.
    var isTLS: Bool { tls != nil }

    /// Connections open, for tests and status.
    var connectionCount: Int { clients.count }

    /// Answers requests with `handler`.
    func start(handler: @escaping Handler) {
        self.handler = handler
        acceptor.onAccept = { [weak self] accepted in self?.accepted(accepted) }
        acceptor.onError = { [weak self] error in self?.acceptFailed(error) }
    }

    /// Stops accepting and closes every connection.
    func stop() {
        acceptor.close()
        closeConnections()
    }

    /// Closes every connection; the listener goes on accepting.
    func closeConnections() {
        for c in clients.values { c.channel.close() }
        clients.removeAll()
    }

    /// A short text answer.
    static func plain(_ status: Int, _ text: String, _ headers: [(String, String)] = []) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: HTTPHeaders(headers + [("Content-Type", "text/plain; charset=utf-8")]), body: Array(text.utf8))
    }

    /// A new connection: closed at once past the caps, else adopted with its first deadline
    /// (TLS or plain as the listener is).
    private func accepted(_ a: AcceptedSocket) {
        loop.assertInEventLoop()
        let host = MasterNode.host(of: a.peerAddress)
        switch admission.admit(host) {
        case .admit: break
        case .addressFull(let open):
            a.socket.close()
            refuse(a.peerAddress, "\(open) connections from \(host) open (limit \(limits.maxConnectionsPerAddress))")
            return
        case .listenerFull(let open):
            a.socket.close()
            refuse(a.peerAddress, "\(open) connections open (limit \(limits.maxConnections))")
            return
        }
        let channel: StreamChannel
        do { channel = try StreamChannel(socket: a.socket, loop: loop) } catch {
            admission.release(host)
            acceptFailed(error)
            return
        }
        let client = HTTPListenerClient(channel: channel, peerAddress: a.peerAddress, limits: requestLimits, listener: limits)
        let id = ObjectIdentifier(client)
        clients[id] = client
        arm(client, client.deadline.opened())
        if let tls {
            channel.onRead = { [weak self, weak client] bytes in
                guard let self, let client else { return }
                self.firstBytes(bytes, client, tls)
            }
        } else {
            receiveRequests(client)
        }
        channel.onClose = { [weak self, weak client] _ in
            if let t = client?.timer { self?.loop.cancel(t) }
            self?.clients[id] = nil
            self?.admission.release(host)
        }
    }

    /// Counts a refused connection and reports it when a log line is due.
    private func refuse(_ peer: String, _ reason: String) {
        switch refusals.failed(now: MonotonicInstant.now - started, stamp: "") {
        case .first: refused(peer, reason, 1)
        case .summary(let count, _): refused(peer, reason, count)
        case .quiet: break
        }
    }

    /// The first bytes on a TLS listener: a TLS handshake record (RFC 8446 5.1,
    /// `ContentType handshake(22)`) starts the session; anything else is taken for plain HTTP
    /// and answered with a redirect to https.
    private func firstBytes(_ bytes: [UInt8], _ client: HTTPListenerClient, _ tls: TLSContext) {
        guard bytes.first == 0x16 else {
            client.channel.onRead = { [weak self, weak client] more in
                guard let self, let client else { return }
                client.parser.append(more)
                self.redirect(client)
            }
            client.parser.append(bytes)
            redirect(client)
            return
        }
        let session: TLSSession
        do { session = try TLSSession(context: tls) } catch {
            acceptFailed(error)
            client.channel.close()
            return
        }
        receiveRequests(client)
        client.channel.install(codec: session, replaying: bytes)
    }

    /// A plain HTTP request on the TLS listener: `301` to the same place over https (or `400`
    /// without a `Host`), then the connection closes.
    private func redirect(_ client: HTTPListenerClient) {
        let request: HTTPRequest?
        do { request = try client.parser.nextRequest() } catch {
            client.channel.close()
            return
        }
        guard let request else { return }
        client.channel.onRead = nil
        let text = "this dashboard is served over https only\n"
        let response: HTTPResponse
        if let host = request.headers["Host"], !host.isEmpty, !host.contains(where: { $0 == " " || $0 == "/" || $0 == "\\" }) {
            response = Self.plain(301, text, [("Location", "https://\(host)/"), ("Connection", "close")])
        } else {
            response = Self.plain(400, text, [("Connection", "close")])
        }
        client.channel.write(response.serialize(omittingBody: request.method == "HEAD"))
        client.channel.closeAfterFlush()
    }

    /// Reads requests from `client` (plaintext, after TLS if any) and answers them.
    private func receiveRequests(_ client: HTTPListenerClient) {
        client.channel.onRead = { [weak self, weak client] bytes in
            guard let self, let client, client.deadline.phase != .streaming else { return }
            self.arm(client, client.deadline.received())
            client.parser.append(bytes)
            self.drain(client)
        }
    }

    /// Sets `client`'s timer as its deadline says.
    private func arm(_ client: HTTPListenerClient, _ timer: HTTPConnectionDeadline.Timer) {
        switch timer {
        case .keep: return
        case .disarm:
            if let t = client.timer { loop.cancel(t) }
            client.timer = nil
        case .arm(let after):
            if let t = client.timer { loop.cancel(t) }
            client.timer = loop.schedule(after: after) { [weak client] in
                client?.channel.close()
            }
        }
    }

    /// Answers every whole request buffered on `client`, in order, until one is missing or a
    /// handler took the connection over.
    private func drain(_ client: HTTPListenerClient) {
        while client.deadline.phase != .streaming {
            let request: HTTPRequest?
            do {
                request = try client.parser.nextRequest()
            } catch let e as HTTPError {
                client.channel.write(Self.plain(e.status, e.message + "\n", [("Connection", "close")]).serialize())
                client.channel.closeAfterFlush()
                return
            } catch {
                client.channel.close()
                return
            }
            guard let req = request else { return }
            switch handler(req, client) {
            case .stream:
                arm(client, client.deadline.streaming())
                return
            case .response(var response):
                if !req.keepAlive && response.headers["Connection"] == nil { response.headers.add(name: "Connection", value: "close") }
                // HEAD: the head GET would send, without the body (RFC 9110 9.3.2).
                client.channel.write(response.serialize(omittingBody: req.method == "HEAD"))
            }
            guard req.keepAlive else {
                client.channel.closeAfterFlush()
                return
            }
            // A kept-alive connection may idle until its next request; one already arriving
            // (pipelined) counts from now.
            arm(client, client.deadline.answered())
            if client.parser.bufferedByteCount > 0 { arm(client, client.deadline.received()) }
        }
    }
}

/// One connection to an `HTTPListener`.
final class HTTPListenerClient {
    let channel: StreamChannel
    /// The peer as `ip:port`.
    let peerAddress: String
    var parser: HTTPRequestParser
    /// What the connection waits for, and until when.
    var deadline: HTTPConnectionDeadline
    var timer: TimerHandle?

    init(channel: StreamChannel, peerAddress: String, limits: HTTPRequestParser.Limits, listener: HTTPListenerLimits) {
        self.channel = channel
        self.peerAddress = peerAddress
        parser = HTTPRequestParser(limits: limits)
        deadline = HTTPConnectionDeadline(limits: listener)
    }
}
