import Discovery
import Foundation
import Logging
import OrderStore
import Posix
import SyncCore
import WebSocket

/// `ordersync master`: publishes the store on the LAN, accepts terminals over WebSocket, applies
/// their operations to the SQLite store in one transaction each and broadcasts the result.
///
/// Everything runs on one event-loop thread; Avahi's callbacks only hop onto it.
public final class MasterNode {
    let configuration: NodeConfiguration
    var logger: Logger
    let loop: EventLoop
    let dataDirectory: DataDirectory
    var db: OrderDatabase!
    var engine: MasterEngine!
    var acceptor: Acceptor?
    var api: LocalAPIServer!
    var discovery: AvahiDiscovery?
    var sessions: [Int: TerminalSession] = [:]
    var nextSessionId = 1
    var storeId = ""
    var terminalName = ""
    var publishedName: String?
    var avahiState = "starting"
    var boundPort: UInt16 = 0
    var livenessTimer: TimerHandle?
    var shuttingDown = false
    let startedAt = Date()

    /// A master for `configuration`; nothing starts before `run()`.
    public init(configuration: NodeConfiguration, logger: Logger) throws {
        self.configuration = configuration
        self.logger = logger
        self.loop = try NodeStartup.prepareProcess()
        self.dataDirectory = DataDirectory(path: configuration.dataDirectory)
    }

    /// Starts everything and serves until SIGINT or SIGTERM; then shuts down cleanly.
    public func run() throws {
        try start()
        loop.run()
        finishShutdown()
    }

    private func start() throws {
        db = try NodeStartup.openStore(configuration, directory: dataDirectory)
        let savedStore = try db.metadata("store.id")
        if let wanted = configuration.store, let saved = savedStore, wanted != saved {
            throw NodeStartupError("\(configuration.dataDirectory) holds store '\(saved)', not '\(wanted)'; use another --data-dir or drop --store")
        }
        storeId = try DataDirectory.identity(db, key: "store.id") {
            configuration.store ?? String(UUID().uuidString.lowercased().prefix(8))
        }
        let epoch = try db.databaseEpoch()
        terminalName = configuration.name ?? DataDirectory.hostName()
        engine = try MasterEngine(store: SQLiteMasterStore(db: db), storeId: storeId, epoch: epoch)
        engine.snapshotChunk = NodeDefaults.snapshotChunk
        logger[metadataKey: "store"] = "\(storeId)"

        let l: TCPListener
        do {
            l = try TCPListener.bind(host: configuration.listenAddress, port: configuration.port, backlog: 128)
        } catch {
            let inUse = (error as? PosixError)?.errno == EADDRINUSE
            throw NodeStartupError("cannot listen on \(configuration.listenAddress):\(configuration.port): \(error)"
                                   + (inUse ? " (another program uses the port? try --port 0)" : ""))
        }
        boundPort = l.localPort
        let openFiles = ResourceLimits.raiseOpenFilesLimit()
        let acceptor = try Acceptor(listener: l, loop: loop) { [weak self] a in self?.terminalConnected(a) }
        // Out of descriptors (EMFILE/ENFILE): the connection stays queued; the acceptor pauses
        // instead of spinning on a readable listener.
        acceptor.backoffMilliseconds = 500
        acceptor.onError = { [weak self] error in
            self?.logger.error("peer.accept_failed", metadata: ["error": "\(error)", "retry_ms": "500"])
        }
        self.acceptor = acceptor

        api = try NodeStartup.startAPI(configuration, loop: loop, logger: logger) { [weak self] route, respond in
            self?.handleAPI(route, respond)
        }

        logger.info("node.started", metadata: [
            "role": "master", "version": "\(NodeVersion.string)", "data_dir": "\(configuration.dataDirectory)",
            "name": "\(terminalName)", "port": "\(boundPort)", "listen": "\(configuration.listenAddress)",
            "service_type": "\(configuration.serviceType)", "epoch": "\(epoch)", "seq": "\(engine.lastSeq)",
            "orders": "\((try? db.orderCount()) ?? 0)", "api.socket": "\(configuration.socketPath)",
            "max_connections": "\(configuration.maxConnections)", "open_files_limit": "\(openFiles)",
        ])

        startDiscovery(epoch: epoch)
        try loop.onSignal([SIGINT, SIGTERM]) { [weak self] signo in self?.beginShutdown(signal: signo) }
        try loop.onSignal([SIGHUP]) { [weak self] _ in self?.logger.info("signal.ignored", metadata: ["signal": "SIGHUP"]) }
    }

    private func startDiscovery(epoch: String) {
        let loop = self.loop
        let handleOnLoop = LoopBound({ [weak self] (event: DiscoveryEvent) in self?.handleDiscovery(event) }, loop: loop)
        let d = AvahiDiscovery { event in
            loop.execute { handleOnLoop.value(event) }
        }
        discovery = d
        do {
            try d.start()
            d.publish(ServiceAnnouncement(name: terminalName, type: configuration.serviceType, port: boundPort,
                                          txt: [("proto", orderSyncProtocolName), ("store", storeId), ("epoch", epoch),
                                                ("path", NodeDefaults.webSocketPath)]))
        } catch {
            avahiState = "unavailable"
            logger.warning("avahi.unavailable", metadata: ["error": "\(error)",
                "hint": "terminals must use --master ws://HOST:\(boundPort)/ until avahi-daemon runs"])
        }
    }

    private func handleDiscovery(_ event: DiscoveryEvent) {
        switch event {
        case .daemonAvailable:
            avahiState = "up"
            logger.info("avahi.up")
        case .daemonUnavailable(let reason):
            avahiState = "down"
            publishedName = nil
            logger.warning("avahi.down", metadata: ["reason": "\(reason)",
                "hint": "still serving on port \(boundPort); publishing again when avahi-daemon is back"])
        case .published(let name):
            publishedName = name
            logger.info("service.published", metadata: ["service.name": "\(name)", "service.type": "\(configuration.serviceType)",
                                                         "port": "\(boundPort)"])
        case .nameCollision(let old, let new):
            logger.warning("service.name_collision", metadata: ["service.name": "\(old)", "service.new_name": "\(new)"])
        case .publishFailed(let reason):
            logger.error("service.publish_failed", metadata: ["reason": "\(reason)"])
        case .serviceFound, .serviceLost, .browseFailed:
            break
        }
    }

    func beginShutdown(signal: Int32) {
        guard !shuttingDown else { return }
        shuttingDown = true
        logger.info("node.stopping", metadata: ["signal": "\(signal == SIGINT ? "SIGINT" : "SIGTERM")", "peers": "\(sessions.count)"])
        acceptor?.close()
        acceptor = nil
        // Withdraw the service first, so no slave picks a master that no longer accepts.
        discovery?.unpublish()
        api.stop()
        for s in sessions.values { s.close(code: .goingAway, reason: "master shutting down") }
        if sessions.isEmpty {
            loop.stop()
        } else {
            // Peers answer the close within milliseconds; do not wait for a dead one.
            _ = loop.schedule(after: 2500) { [weak self] in self?.loop.stop() }
        }
    }

    func sessionEnded() {
        if shuttingDown && sessions.isEmpty { loop.stop() }
        if sessions.isEmpty, let t = livenessTimer {
            loop.cancel(t)
            livenessTimer = nil
        }
    }

    private func finishShutdown() {
        discovery?.stop()
        discovery = nil
        db?.close()
        dataDirectory.release()
        logger.info("node.stopped", metadata: ["seq": "\(engine?.lastSeq ?? 0)"])
    }
}
