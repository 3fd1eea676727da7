import EventLoopIO
import Logging

extension MasterNode {
    /// The seat of a master started on its own (not handed over by a role it takes over): its
    /// data directory, its writer, and front-ends of its own, the dashboard among them when
    /// `--http-listen` asks for it. Serves the ports the start bound (`ports`), else binds them.
    static func ownSeat(
        _ configuration: NodeConfiguration, _ loop: EventLoop, _ logger: Logger, dataDirectory: DataDirectory,
        writer: StoreWriter, ports: StartupPorts?
    ) throws -> RoleSeat {
        let dashboard = try (ports?.dashboard ?? StartupPorts.dashboard(configuration, logger)).map {
            try DashboardServer(bound: $0, loop: loop, logger: logger)
        }
        return RoleSeat(
            dataDirectory: dataDirectory, writer: writer,
            frontEnds: try FrontEnds(
                configuration: configuration, loop: loop, logger: logger, dashboard: dashboard, metrics: ports?.metrics))
    }
}
