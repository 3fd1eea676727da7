import EventLoopIO
import HTTP1
import Logging
import NodePolicy

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
        HTTPListener.plain(status, text, headers)
    }
}

/// `--metrics-listen ADDR:PORT`: a plain HTTP/1.1 listener for a Prometheus server, on the
/// node's loop. It answers only `GET` and `HEAD /metrics` (404 elsewhere); requests are bounded (8 KiB of
/// head, no body), connections by ``HTTPListenerLimits/standard`` (128, 12 per address, 5 s
/// for a request, 30 s idle); answered in order, and nothing else of the node is reachable
/// through it.
final class MetricsListener {
    /// Largest request head; no body is accepted.
    static let limits = HTTPRequestParser.Limits(maxHeaderBytes: 8 << 10, maxBodyBytes: 0)

    private let listener: HTTPListener
    /// The address actually bound (`ip:port`).
    var localAddress: String { listener.localAddress }

    /// Binds `address` (`--metrics-listen`), or explains why not: a `NodeStartupError` naming
    /// the address. A start binds it before anything is written (``StartupPorts``).
    static func bind(_ address: MetricsAddress) throws -> TCPListener {
        try HTTPListener.bind(address, flag: "--metrics-listen", purpose: "metrics")
    }

    /// Serves `listener` (bound by ``bind(_:)``) on `loop` (on its thread); connections wait in
    /// the backlog until `start(render:)`.
    init(listener bound: TCPListener, loop: EventLoop, logger: Logger) throws {
        listener = try HTTPListener(
            listener: bound, requestLimits: Self.limits,
            limits: .standard, loop: loop,
            acceptFailed: { error in logger.warning("metrics.accept_failed", metadata: ["error": "\(error)"]) },
            refused: { peer, reason, count in
                logger.notice(
                    "metrics.connection_refused", metadata: ["peer.address": "\(peer)", "reason": "\(reason)", "count": "\(count)"])
            })
    }

    /// Serves `GET /metrics` with what `render` returns.
    func start(render: @escaping () -> [UInt8]) {
        listener.start { req, _ in
            guard req.path == "/metrics" else {
                return .response(MetricsExposition.plain(404, "not found: only /metrics is served here\n"))
            }
            return .response(MetricsExposition.response(to: req, render: render))
        }
    }

    /// Stops accepting and closes every connection.
    func stop() { listener.stop() }
}

/// `--metrics-listen` and `--http-listen`: `HOST:PORT` or `[IPV6]:PORT`.
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
