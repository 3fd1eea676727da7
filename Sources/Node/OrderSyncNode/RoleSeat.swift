import EventLoopIO
import Logging

/// What a node's role holds that the next role on the same node takes over (a slave promoted
/// to master, a master stepping down): the claimed data directory (its lock, the node key, the
/// store), the one ``StoreWriter`` of the store, and the running ``FrontEnds`` (the local API
/// socket and `--metrics-listen`, which stay open across the switch).
///
/// A role leaving for another (``handingOver``) keeps the seat: its shutdown hands the
/// front-ends over instead of closing them, and its finish leaves the writer and the data
/// directory open. A role leaving for good closes them. Loop-bound: used on the node's loop.
final class RoleSeat {
    /// The data directory, locked, with the node key and the store.
    let dataDirectory: DataDirectory
    /// The one writer of the store, for every role the node plays.
    let writer: StoreWriter
    /// The local API, `--metrics-listen` and the dashboard (served by a master; a slave's page
    /// says it is a standby).
    let frontEnds: FrontEnds
    /// True once the role leaves for another that takes this seat.
    var handingOver = false
    /// Asks the node to leave the role for the one the closure builds (set by the `Node`
    /// playing the role; nil for a role run on its own).
    var requestHandOver: ((_ reason: String, _ make: @escaping () throws -> Node.Role) -> Void)?

    /// A seat of `dataDirectory`, its `writer` and its `frontEnds`.
    init(dataDirectory: DataDirectory, writer: StoreWriter, frontEnds: FrontEnds) {
        self.dataDirectory = dataDirectory
        self.writer = writer
        self.frontEnds = frontEnds
    }

    /// The seat of a role started on its own (not handed over by a role it takes over): its
    /// data directory, its writer, and front-ends of its own, the dashboard among them when
    /// `--http-listen` asks for it (a slave's is served once it is promoted). Serves the ports
    /// the start bound (`ports`), else binds them.
    static func own(
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

    /// The role's front-ends stop as the role leaves: closed for good, or handed over (the
    /// listeners stay, the role's own answers stop) when another role takes the seat.
    func stopFrontEnds() {
        if handingOver { frontEnds.handOver() } else { frontEnds.stop() }
    }

    /// The role finished: the writer and the data directory close unless another role takes
    /// them over.
    func close() {
        guard !handingOver else { return }
        writer.close()
        dataDirectory.close()
    }
}
