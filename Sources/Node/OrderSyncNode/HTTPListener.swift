import EventLoopIO
import HTTP1

/// A plain HTTP/1.1 listener on TCP, on the node's loop: `--metrics-listen` and the master's
/// `--http-listen` (the dashboard). Requests are bounded (head and body limits, 10 s to arrive,
/// a cap on connections), answered in order, one at a time per connection; what each path
/// answers is the handler's.
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
    private let limits: HTTPRequestParser.Limits
    private let maxConnections: Int
    private var handler: Handler = { _, _ in .response(HTTPListener.plain(503, "starting\n")) }
    private let acceptor: Acceptor
    private var clients: [ObjectIdentifier: HTTPListenerClient] = [:]
    /// The address actually bound (`ip:port`).
    let localAddress: String

    /// Binds `address` on `loop` (on its thread); connections wait in the backlog until
    /// `start(handler:)`. A failure to bind is a `NodeStartupError` naming `flag`.
    init(
        address: MetricsAddress, flag: String, purpose: String, limits: HTTPRequestParser.Limits,
        maxConnections: Int, loop: EventLoop, acceptFailed: @escaping (any Error) -> Void
    ) throws {
        self.loop = loop
        self.acceptFailed = acceptFailed
        self.limits = limits
        self.maxConnections = maxConnections
        let listener: TCPListener
        do {
            listener = try TCPListener.bind(host: address.host, port: address.port, backlog: 16)
        } catch {
            throw NodeStartupError("cannot listen for \(purpose) on \(address) (\(flag)): \(error)")
        }
        localAddress = listener.localAddress
        acceptor = try Acceptor(listener: listener, loop: loop) { accepted in accepted.socket.close() }
    }

    /// Answers requests with `handler`.
    func start(handler: @escaping Handler) {
        self.handler = handler
        acceptor.onAccept = { [weak self] accepted in self?.accepted(accepted) }
        acceptor.onError = { [weak self] error in self?.acceptFailed(error) }
    }

    /// Stops accepting and closes every connection.
    func stop() {
        acceptor.close()
        for c in clients.values { c.channel.close() }
        clients.removeAll()
    }

    /// A short text answer.
    static func plain(_ status: Int, _ text: String, _ headers: [(String, String)] = []) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: HTTPHeaders(headers + [("Content-Type", "text/plain; charset=utf-8")]), body: Array(text.utf8))
    }

    private func accepted(_ a: AcceptedSocket) {
        guard clients.count < maxConnections else {
            a.socket.close()
            return
        }
        let channel: StreamChannel
        do { channel = try StreamChannel(socket: a.socket, loop: loop) } catch {
            acceptFailed(error)
            return
        }
        let client = HTTPListenerClient(channel: channel, peerAddress: a.peerAddress, limits: limits)
        let id = ObjectIdentifier(client)
        clients[id] = client
        renewDeadline(client)
        channel.onRead = { [weak self, weak client] bytes in
            guard let self, let client, !client.streaming else { return }
            client.parser.append(bytes)
            self.drain(client)
        }
        channel.onClose = { [weak self, weak client] _ in
            if let t = client?.deadline { self?.loop.cancel(t) }
            self?.clients[id] = nil
        }
    }

    /// A connection gets 10 s for each request to arrive.
    private func renewDeadline(_ client: HTTPListenerClient) {
        if let t = client.deadline { loop.cancel(t) }
        client.deadline = loop.schedule(after: LocalAPIServer.requestTimeout) { [weak client] in
            client?.channel.close()
        }
    }

    private func drain(_ client: HTTPListenerClient) {
        while !client.streaming {
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
                client.streaming = true
                if let t = client.deadline { loop.cancel(t) }
                client.deadline = nil
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
            // A kept-alive connection gets a fresh deadline for its next request.
            renewDeadline(client)
        }
    }
}

/// One connection to an `HTTPListener`.
final class HTTPListenerClient {
    let channel: StreamChannel
    /// The peer as `ip:port`.
    let peerAddress: String
    var parser: HTTPRequestParser
    var deadline: TimerHandle?
    /// A handler took the connection over.
    var streaming = false

    init(channel: StreamChannel, peerAddress: String, limits: HTTPRequestParser.Limits) {
        self.channel = channel
        self.peerAddress = peerAddress
        parser = HTTPRequestParser(limits: limits)
    }
}
