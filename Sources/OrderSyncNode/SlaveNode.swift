import Discovery
import Foundation
import Logging
import OrderStore
import Posix
import SyncCore
import WebSocket

/// `ordersync slave`: finds the store's master through DNS-SD (or `--master`), keeps a replica
/// of its orders in SQLite, and forwards the terminal's own changes to the master.
public final class SlaveNode {
    let configuration: NodeConfiguration
    var logger: Logger
    let loop: EventLoop
    let dataDirectory: DataDirectory
    var db: OrderDatabase!
    var engine: SlaveEngine!
    var api: LocalAPIServer!
    var discovery: AvahiDiscovery?
    var terminalId = ""
    var terminalName = ""
    var avahiState = "starting"
    var shuttingDown = false
    let startedAt = Date()

    /// Services seen on the LAN, by instance name + domain + interface, with the order seen.
    var services: [String: (service: ResolvedService, seen: Int)] = [:]
    var seenCounter = 0
    var lastStoreChoiceLog = ""
    /// A slave that knows no store waits this long after the first master it sees, so that it
    /// sees every store on the LAN before it joins one.
    var storeChoiceSettled = false
    var settleTimer: TimerHandle?

    /// The link to the master.
    var link: MasterLink?
    var target: MasterURL?
    var targetService: String?
    var linkPhase: MasterLink.Phase = .idle
    var linkSince: Int64 = 0
    var lastLinkError: String?
    var attempts = 0
    var retryTimer: TimerHandle?
    var livenessTimer: TimerHandle?
    var pendingWrites: [String: PendingWrite] = [:]
    var retryFlushTimer: TimerHandle?
    var ackTimer: TimerHandle?

    /// A slave for `configuration`; nothing starts before `run()`.
    public init(configuration: NodeConfiguration, logger: Logger) throws {
        self.configuration = configuration
        self.logger = logger
        self.loop = try NodeStartup.prepareProcess()
        self.dataDirectory = DataDirectory(path: configuration.dataDirectory)
    }

    /// Starts everything and runs until SIGINT or SIGTERM.
    public func run() throws {
        try start()
        loop.run()
        finishShutdown()
    }

    private func start() throws {
        db = try NodeStartup.openStore(configuration, directory: dataDirectory)
        terminalId = try DataDirectory.identity(db, key: "terminal.id") { UUID().uuidString.lowercased() }
        terminalName = configuration.name ?? DataDirectory.hostName()
        engine = try SlaveEngine(store: SQLiteSlaveStore(db: db), terminalId: terminalId, terminalName: terminalName,
                                 configuredStore: configuration.store)
        if let wanted = configuration.store, let joined = engine.joinedStore, wanted != joined {
            throw NodeStartupError("\(configuration.dataDirectory) is a replica of store '\(joined)', not '\(wanted)'; use another --data-dir")
        }
        if let s = configuration.store ?? engine.joinedStore { logger[metadataKey: "store"] = "\(s)" }

        api = try NodeStartup.startAPI(configuration, loop: loop, logger: logger) { [weak self] route, respond in
            self?.handleAPI(route, respond)
        }
        logger.info("node.started", metadata: [
            "role": "slave", "version": "\(NodeVersion.string)", "data_dir": "\(configuration.dataDirectory)",
            "name": "\(terminalName)", "terminal.id": "\(terminalId)", "service_type": "\(configuration.serviceType)",
            "master": "\(configuration.masterURL?.description ?? "discover")", "seq": "\(engine.lastSeq)",
            "orders": "\((try? db.orderCount()) ?? 0)", "api.socket": "\(configuration.socketPath)",
            "outbox": "\(engine.outboxCount)",
        ])
        try loop.onSignal([SIGINT, SIGTERM]) { [weak self] signo in self?.beginShutdown(signal: signo) }
        try loop.onSignal([SIGHUP]) { [weak self] _ in self?.logger.info("signal.ignored", metadata: ["signal": "SIGHUP"]) }

        if let url = configuration.masterURL {
            target = url
            connect()
        } else {
            startDiscovery()
        }
    }

    private func startDiscovery() {
        let loop = self.loop
        let handleOnLoop = LoopBound({ [weak self] (event: DiscoveryEvent) in self?.handleDiscovery(event) }, loop: loop)
        let d = AvahiDiscovery { event in
            loop.execute { handleOnLoop.value(event) }
        }
        discovery = d
        do {
            try d.start()
            d.browse(type: configuration.serviceType)
            logger.info("master.searching", metadata: ["service_type": "\(configuration.serviceType)"])
        } catch {
            avahiState = "unavailable"
            logger.warning("avahi.unavailable", metadata: ["error": "\(error)",
                "hint": "waiting for avahi-daemon; or start with --master ws://HOST:PORT/"])
        }
    }

    func beginShutdown(signal: Int32) {
        guard !shuttingDown else { return }
        shuttingDown = true
        logger.info("node.stopping", metadata: ["signal": "\(signal == SIGINT ? "SIGINT" : "SIGTERM")"])
        if let t = retryTimer { loop.cancel(t) }
        api.stop()
        answerPendingWritesAsQueued()
        if let l = link, !l.isEnded {
            l.close(code: .goingAway, reason: "terminal shutting down")
            _ = loop.schedule(after: 2500) { [weak self] in self?.loop.stop() }
        } else {
            loop.stop()
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
