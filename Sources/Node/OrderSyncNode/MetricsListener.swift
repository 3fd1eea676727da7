import EventLoopIO
import HTTP1
import Logging

/// `GET /metrics` as HTTP answers it, on the local API socket and on `--metrics-listen`.
enum MetricsExposition {
    /// The exposition's media type (Prometheus text format 0.0.4).
    static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// The answer to `request` on a path that is `/metrics`: the exposition for GET (and its
    /// head for HEAD: send it with ``wire(_:to:)``), 405 for other methods.
    static func response(to request: HTTPRequest, render: () -> [UInt8]) -> HTTPResponse {
        var headers: [(String, String)] = []
        if !request.keepAlive { headers.append(("Connection", "close")) }
        guard request.method == "GET" || request.method == "HEAD" else {
            return plain(405, "only GET /metrics is served here\n", headers + [("Allow", "GET, HEAD")])
        }
        return HTTPResponse(status: 200, headers: HTTPHeaders(headers + [("Content-Type", contentType)]), body: render())
    }

    /// The bytes of `response` to `request`: without the body for HEAD (RFC 9110 9.3.2).
    static func wire(_ response: HTTPResponse, to request: HTTPRequest) -> [UInt8] {
        response.serialize(omittingBody: request.method == "HEAD")
    }

    /// A short text answer.
    static func plain(_ status: Int, _ text: String, _ headers: [(String, String)] = []) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: HTTPHeaders(headers + [("Content-Type", "text/plain; charset=utf-8")]), body: Array(text.utf8))
    }
}

/// `--metrics-listen ADDR:PORT`: a plain HTTP/1.1 listener for a Prometheus server, on the
/// node's loop. It answers only `GET /metrics` (404 elsewhere); requests are bounded (8 KiB of
/// head, no body, 10 s to arrive, 64 connections), answered in order, and nothing else of the
/// node is reachable through it.
final class MetricsListener {
    /// Most connections open at once; more are closed at accept.
    static let maxConnections = 64
    /// Largest request head; no body is accepted.
    static let limits = HTTPRequestParser.Limits(maxHeaderBytes: 8 << 10, maxBodyBytes: 0)

    private let loop: EventLoop
    private let logger: Logger
    private var render: () -> [UInt8] = { [] }
    private let acceptor: Acceptor
    private var clients: [ObjectIdentifier: MetricsClient] = [:]
    /// The address actually bound (`ip:port`).
    let localAddress: String

    /// Binds `address` on `loop` (on its thread); connections wait in the backlog until
    /// `start(render:)`. A failure to bind is a `NodeStartupError` naming the address.
    init(address: MetricsAddress, loop: EventLoop, logger: Logger) throws {
        self.loop = loop
        self.logger = logger
        let listener: TCPListener
        do {
            listener = try TCPListener.bind(host: address.host, port: address.port, backlog: 16)
        } catch {
            throw NodeStartupError("cannot listen for metrics on \(address) (--metrics-listen): \(error)")
        }
        localAddress = listener.localAddress
        acceptor = try Acceptor(listener: listener, loop: loop) { accepted in accepted.socket.close() }
    }

    /// Serves `GET /metrics` with what `render` returns.
    func start(render: @escaping () -> [UInt8]) {
        self.render = render
        acceptor.onAccept = { [weak self] accepted in self?.accepted(accepted) }
        acceptor.onError = { [weak self] error in
            self?.logger.warning("metrics.accept_failed", metadata: ["error": "\(error)"])
        }
    }

    /// Stops accepting and closes every connection.
    func stop() {
        acceptor.close()
        for c in clients.values { c.channel.close() }
        clients.removeAll()
    }

    private func accepted(_ a: AcceptedSocket) {
        guard clients.count < Self.maxConnections else {
            a.socket.close()
            return
        }
        let channel: StreamChannel
        do { channel = try StreamChannel(socket: a.socket, loop: loop) } catch {
            logger.warning("metrics.accept_failed", metadata: ["error": "\(error)"])
            return
        }
        let client = MetricsClient(channel: channel)
        let id = ObjectIdentifier(client)
        clients[id] = client
        client.deadline = loop.schedule(after: LocalAPIServer.requestTimeout) { [weak client] in
            client?.channel.close()
        }
        channel.onRead = { [weak self, weak client] bytes in
            guard let self, let client else { return }
            client.parser.append(bytes)
            self.drain(client)
        }
        channel.onClose = { [weak self, weak client] _ in
            if let t = client?.deadline { self?.loop.cancel(t) }
            self?.clients[id] = nil
        }
    }

    private func drain(_ client: MetricsClient) {
        while true {
            let request: HTTPRequest?
            do {
                request = try client.parser.nextRequest()
            } catch let e as HTTPError {
                client.channel.write(MetricsExposition.plain(e.status, e.message + "\n", [("Connection", "close")]).serialize())
                client.channel.closeAfterFlush()
                return
            } catch {
                client.channel.close()
                return
            }
            guard let req = request else { return }
            let response =
                req.path == "/metrics"
                ? MetricsExposition.response(to: req, render: render)
                : MetricsExposition.plain(404, "not found: only /metrics is served here\n", req.keepAlive ? [] : [("Connection", "close")])
            client.channel.write(MetricsExposition.wire(response, to: req))
            guard req.keepAlive else {
                client.channel.closeAfterFlush()
                return
            }
            // A kept-alive connection gets a fresh deadline for its next request.
            if let t = client.deadline { loop.cancel(t) }
            client.deadline = loop.schedule(after: LocalAPIServer.requestTimeout) { [weak client] in
                client?.channel.close()
            }
        }
    }
}

/// One connection to the metrics listener.
final class MetricsClient {
    let channel: StreamChannel
    var parser = HTTPRequestParser(limits: MetricsListener.limits)
    var deadline: TimerHandle?

    init(channel: StreamChannel) {
        self.channel = channel
    }
}

/// `--metrics-listen`: `HOST:PORT` or `[IPV6]:PORT`.
public struct MetricsAddress: Equatable, Sendable, CustomStringConvertible {
    public var host: String
    public var port: UInt16

    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// Parses `127.0.0.1:9420`, `0.0.0.0:9420`, `[::1]:9420`; nil otherwise.
    public init?(parsing text: String) {
        guard let colon = text.lastIndex(of: ":") else { return nil }
        var host = String(text[..<colon])
        guard let port = UInt16(text[text.index(after: colon)...]) else { return nil }
        if host.hasPrefix("[") && host.hasSuffix("]") {
            host = String(host.dropFirst().dropLast())
            guard host.contains(":") else { return nil }
        } else if host.contains(":") {
            return nil
        }
        guard !host.isEmpty, !host.contains(where: { $0 == " " || $0 == "/" }) else { return nil }
        self.host = host
        self.port = port
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
