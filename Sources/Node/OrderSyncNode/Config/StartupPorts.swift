import EventLoopIO
import Logging
import TLS

/// The TCP ports a daemon listens on, bound among its start's cheap refusals (the `checks` of
/// ``DataDirectory/init(claimingFor:logger:checks:)``: once the lock is held, before the node
/// key or the store is made, before a schema migration or a restored backup's adoption) and
/// handed to what serves them once the node is built. A master binds the terminals' port,
/// `--metrics-listen` and `--http-listen` (then reads or makes the dashboard's certificate); a
/// slave binds `--metrics-listen` and `--http-listen` (the dashboard it serves once promoted;
/// the terminals' port is bound at the promotion, ``SlaveNode/promotedPorts(_:)``). A port in use, a forbidden one or an address this host lacks
/// refuses the start (`start.port_in_use`, `start.permission_denied`, `start.listen_failed`)
/// with the data directory as it was, and nothing can take a port between that check and its
/// use: the socket bound is the socket served.
struct StartupPorts {
    /// The dashboard's socket, and what serves it over TLS (nil: plain HTTP).
    struct Dashboard {
        /// The bound `--http-listen` socket.
        let listener: TCPListener
        /// The TLS context of its connections; nil: plain HTTP.
        let tls: TLSContext?
        /// The certificate's SHA-256 (`AB:CD:...`) when served over TLS.
        let fingerprint: String?
    }

    /// The terminals' port (a master's); nil for a slave.
    let terminals: TCPListener?
    /// `--metrics-listen`, bound; nil when not asked for.
    let metrics: TCPListener?
    /// `--http-listen` (the dashboard, a slave's served once promoted), bound; nil when not asked for.
    let dashboard: Dashboard?

    /// Binds every port `configuration`'s role listens on, in the order an operator reads them
    /// (terminals, metrics, dashboard), then loads or makes the dashboard's certificate, so
    /// that a busy port never leaves a certificate behind. Throws the first refusal (a
    /// `NodeStartupError`); the ports bound before it are closed as they are dropped.
    static func bind(for configuration: NodeConfiguration, logger: Logger) throws -> StartupPorts {
        let master = configuration.role == .master
        let terminals = master ? try MasterNode.bindTerminalPort(configuration) : nil
        let metrics = try configuration.metricsListen.map(MetricsListener.bind)
        // A slave binds the dashboard too: it serves it once promoted, in the same process.
        let dashboard = try Self.dashboard(configuration, logger)
        return StartupPorts(terminals: terminals, metrics: metrics, dashboard: dashboard)
    }

    /// Binds `--http-listen` when `configuration` asks for it, then (over TLS) reads or makes
    /// the certificate and its context; nil when no dashboard is asked for.
    static func dashboard(_ configuration: NodeConfiguration, _ logger: Logger) throws -> Dashboard? {
        guard let address = configuration.httpListen else { return nil }
        let listener = try DashboardServer.bind(address)
        guard let certificate = try MasterNode.dashboardCertificate(configuration, logger) else {
            return Dashboard(listener: listener, tls: nil, fingerprint: nil)
        }
        do {
            return Dashboard(
                listener: listener, tls: try TLSContext.server(certificate: certificate), fingerprint: certificate.fingerprintText)
        } catch {
            throw NodeStartupError("cannot serve the dashboard over TLS: \(error)")
        }
    }
}
