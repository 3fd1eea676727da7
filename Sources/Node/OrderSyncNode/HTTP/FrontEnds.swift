import EventLoopIO
import Logging
import NodePolicy

/// A node's HTTP front-ends, owned together: the local API socket (every node), `--metrics-listen`
/// (`GET /metrics` over TCP) and, with `--http-listen`, the store dashboard (a master serves it;
/// a slave answers that it is a standby, and serves it once promoted).
///
/// Built with the node (the TCP ports are bound then, so a busy port fails the start), started
/// together once the node is wired and stopped together when it shuts down; its phase is a
/// ``FrontEndsPhase``. Loop-bound: every call on the node's loop.
final class FrontEnds {
    private let loop: EventLoop
    /// The local API (`DATA/api.sock`): routes, the change feed, `GET /metrics`.
    let api: LocalAPIServer
    /// `--metrics-listen`, or nil.
    let metricsListener: MetricsListener?
    /// The store dashboard (`--http-listen`), or nil.
    let dashboard: DashboardServer?
    private var state = FrontEndsPhase()
    /// What `GET /metrics` renders: the role playing now (`--metrics-listen` keeps its listener
    /// across a hand-over and asks this each time).
    private var renderMetrics: () -> [UInt8] = { [] }

    /// The front-ends `configuration` asks for on `loop`, with `dashboard` (`--http-listen`)
    /// or nil. Serves `--metrics-listen` on `metrics` (bound by the start, ``StartupPorts``),
    /// else binds it; nothing is answered before ``start(_:handler:metrics:dashboard:)``.
    init(
        configuration: NodeConfiguration, loop: EventLoop, logger: Logger, dashboard: DashboardServer?,
        metrics bound: TCPListener? = nil
    ) throws {
        self.loop = loop
        api = LocalAPIServer(loop: loop, path: configuration.socketPath, logger: logger)
        metricsListener = try (bound ?? configuration.metricsListen.map(MetricsListener.bind)).map {
            try MetricsListener(listener: $0, loop: loop, logger: logger)
        }
        self.dashboard = dashboard
    }

    /// The phase now.
    var phase: FrontEndsPhase.Phase { state.phase }

    /// Opens the local API socket with `handler`, serves `GET /metrics` from `metrics` on it and
    /// on `--metrics-listen`, and the dashboard from `source` (a master; nil: a slave, whose
    /// dashboard answers that it is a standby). Throws (with nothing left
    /// listening) when the API socket cannot be opened.
    func start(
        _ configuration: NodeConfiguration, handler: @escaping LocalAPIServer.Handler,
        metrics: @escaping () -> [UInt8], dashboard source: DashboardSource?
    ) throws {
        loop.assertInEventLoop()
        if state.phase == .running {
            // A role took the seat of another (`RoleSeat`): the listeners run, it answers now.
            api.handler = handler
            renderMetrics = metrics
            dashboard?.start(source: source)
            return
        }
        state.start()
        renderMetrics = metrics
        do {
            try NodeStartup.startAPI(api, configuration, handler: handler)
        } catch {
            state.failedToStart()
            throw error
        }
        NodeMetrics.serve(api: api, listener: metricsListener) { [unowned self] in self.renderMetrics() }
        dashboard?.start(source: source)
        state.started()
    }

    /// A role leaves its seat to another: the local API and `--metrics-listen` keep listening
    /// (their connections too: an answer the next role gives still reaches its caller), the
    /// leaving role's own routes are withdrawn and requests wait a moment with `503 switching`;
    /// the dashboard keeps listening, its sessions and streams end (the next role's tokens
    /// decide who logs in again). Does nothing when they are not running.
    func handOver() {
        loop.assertInEventLoop()
        guard state.phase == .running else { return }
        api.handler = { _, respond in
            respond(503, LocalAPIRoute.errorBody(code: "starting", message: "the node is switching roles; try again in a moment"))
        }
        api.masterHandler = nil
        api.promoteHandler = nil
        api.changesHandler = nil
        dashboard?.withdraw()
    }

    /// Closes every listener and connection (the API socket file is removed); does nothing when
    /// they are not running.
    func stop() {
        loop.assertInEventLoop()
        guard state.stop() else { return }
        api.stop()
        metricsListener?.stop()
        dashboard?.stop()
        state.stopped()
    }
}
