import ArgumentParser
import NodePolicy
import OrderSyncNode

/// What a master serves on the network, shared by `ordersync master` and `ordersync slave`: the
/// terminals' port and the store dashboard. A slave takes them so that, promoted (`ordersync
/// promote` or `--auto-failover`), it serves the terminals on the store's usual port and the
/// dashboard at once, in the same process (Docs/OPERATIONS.md, "The store dashboard after a
/// failover"); until then it serves the dashboard's page, which says it is a standby.
struct ServedPortsOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "TCP port for terminals (a slave: once promoted); 0 picks any free port. (default: \(NodeDefaults.port))", valueName: "n"))
    var port: Int?

    @Option(
        name: .long,
        help: ArgumentHelp("Address to listen on for terminals (a slave: once promoted). (default: 0.0.0.0)", valueName: "address"))
    var listen: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Serve the store dashboard (a read-only web page, login with `ordersync dashboard`) on this TCP address; a slave serves it once promoted (until then the page says it is a standby); off by default.",
            valueName: "addr:port"))
    var httpListen: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Serve the dashboard over TLS (a self-signed certificate kept in the data directory): auto (when --http-listen is beyond loopback), on or off. (default: auto)",
            valueName: "auto|on|off"))
    var httpTLS: DashboardTLSMode?

    /// The options given on the command line, into `s`.
    func flags(into s: inout NodeSettings) {
        s.port = port.given
        s.listen = listen.given
        s.httpListen = httpListen.given
        s.httpTLS = httpTLS.given
    }

    /// The ports of `s` (flags over the file over the defaults), checked, into `c`.
    static func apply(_ s: NodeSettings, to c: inout NodeConfiguration) throws {
        let port = s.port.or(Int(NodeDefaults.port))
        guard (0...65535).contains(port.value) else { throw problem("--port must be 0-65535.", port.origin) }
        c.port = UInt16(port.value)
        c.listenAddress = s.listen.or("0.0.0.0").value
        c.httpListen = try s.httpListen.map { h in
            guard let address = MetricsAddress(parsing: h.value) else {
                throw problem("--http-listen must look like 0.0.0.0:8080 or [::1]:8080 (got '\(h.value)').", h.origin)
            }
            return address
        }
        c.httpTLS = s.httpTLS.or(.auto).value
    }
}
