import EventLoopIO
import Logging

/// A node's HTTP front-ends, owned together: the local API socket (every node), `--metrics-listen`
/// (`GET /metrics` over TCP) and, on a master with `--http-listen`, the store dashboard.
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
    /// The store dashboard (`--http-listen`, masters only), or nil.
    let dashboard: DashboardServer?
    private var state = FrontEndsPhase()

    /// The front-ends `configuration` asks for on `loop`, with `dashboard` (built by a master)
    /// or nil. Binds `--metrics-listen`; nothing is answered before ``start(_:handler:metrics:dashboard:)``.
    init(configuration: NodeConfiguration, loop: EventLoop, logger: Logger, dashboard: DashboardServer?) throws {
        self.loop = loop
        api = LocalAPIServer(loop: loop, path: configuration.socketPath, logger: logger)
        metricsListener = try configuration.metricsListen.map { try MetricsListener(address: $0, loop: loop, logger: logger) }
        self.dashboard = dashboard
    }

    /// The phase now.
    var phase: FrontEndsPhase.Phase { state.phase }

    /// Opens the local API socket with `handler`, serves `GET /metrics` from `metrics` on it and
    /// on `--metrics-listen`, and the dashboard from `source`. Throws (with nothing left
    /// listening) when the API socket cannot be opened.
    func start(
        _ configuration: NodeConfiguration, handler: @escaping LocalAPIServer.Handler,
        metrics: @escaping () -> [UInt8], dashboard source: DashboardSource?
    ) throws {
        loop.assertInEventLoop()
        state.start()
        do {
            try NodeStartup.startAPI(api, configuration, handler: handler)
        } catch {
            state.failedToStart()
            throw error
        }
        NodeMetrics.serve(api: api, listener: metricsListener, render: metrics)
        if let source { dashboard?.start(source: source) }
        state.started()
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
