import Discovery
import EventLoopIO
import Foundation
import Logging

/// The start of `ordersync master`: the cheap checks that can refuse it come before anything is
/// written to the data directory.
extension MasterNode {
    /// A master for the `ordersync master` command: prepares the process (signals), claims the
    /// data directory and publishes through Avahi. Its ports (terminals, `--metrics-listen`,
    /// `--http-listen` and the dashboard's certificate: ``StartupPorts``) are bound once the
    /// lock is held and before the key or the store is made: a port in use leaves the directory
    /// as it was, and so does any later failure of the start (``DataDirectory/abandon()``).
    public convenience init(configuration: NodeConfiguration, logger: Logger) throws {
        let loop = try NodeStartup.prepareProcess()
        var ports: StartupPorts?
        let dataDirectory = try DataDirectory(claimingFor: configuration) {
            ports = try StartupPorts.bind(for: configuration, logger: logger)
        }
        do {
            try self.init(
                configuration: configuration, loop: loop, dataDirectory: dataDirectory, discovery: AvahiServiceDiscovery(),
                logger: logger, seat: nil, promotion: nil, ports: ports)
        } catch {
            dataDirectory.abandon()
            throw error
        }
    }

    /// Binds the terminals' port of `configuration`, or explains why not.
    static func bindTerminalPort(_ configuration: NodeConfiguration) throws -> TCPListener {
        do {
            return try TCPListener.bind(host: configuration.listenAddress, port: configuration.port, backlog: 128)
        } catch {
            let failure = StartupFailure.ofListen(error)
            throw NodeStartupError(
                "cannot listen on \(configuration.listenAddress):\(configuration.port): \(error)"
                    + (failure == .portInUse ? " (another program uses the port? try --port 0)" : ""), failure: failure)
        }
    }
}
