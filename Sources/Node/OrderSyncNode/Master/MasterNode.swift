import Discovery
import Dispatch
import EventLoopIO
import Foundation
import Logging
import NodePolicy
import OrderStore
import SyncCore
import WebSocket

/// `ordersync master`: publishes the store on the LAN, accepts terminals over WebSocket, applies
/// their operations to the SQLite store in one transaction each and broadcasts the result.
///
/// Built whole from its event loop, its claimed data directory (the store) and its discovery;
/// everything runs on the loop's thread, and Avahi's callbacks only hop onto it.
///
/// Not `Sendable`: every stored property is touched only on the loop's thread. Other threads
/// reach it through ``shutdownHandle`` and, for discovery events, a `LoopBound` hop.
public final class MasterNode {
    let configuration: NodeConfiguration
    var logger: Logger
    let loop: EventLoop
    /// The data directory, the store's writer and the front-ends, kept by the node from one role
    /// to the next (a promotion, a step-down).
    let seat: RoleSeat
    var dataDirectory: DataDirectory { seat.dataDirectory }
    /// The one writer of the store: group commit, reads, writes.
    var writer: StoreWriter { seat.writer }
    var engine: MasterEngine
    let acceptor: Acceptor
    /// The local API, `--metrics-listen` and the dashboard, started and stopped together.
    var frontEnds: FrontEnds { seat.frontEnds }
    /// The promotion this master is a candidate of (``MasterCandidacy``); nil: master proper.
    var candidacy: MasterCandidacy?
    var lease: LeaseWatch? // `--auto-failover`: the lease (MasterNode+Lease.swift); nil: off.
    /// The term served (TXT `term`): the candidacy's, or the store's `sync.term`.
    var term: Int64
    /// The local API socket (`frontEnds.api`).
    var api: LocalAPIServer { frontEnds.api }
    let discovery: (any ServiceDiscovery)?
    /// The terminals' connections, their ids and per-address caps.
    let terminals: TerminalRegistry
    /// The terminals' sessions by id (read-only; `terminals` changes them).
    var sessions: [Int: TerminalSession] { terminals.sessions }
    let storeId: String
    let terminalName: String
    /// The DNS-SD instance name asked for (Avahi may publish another after a collision).
    let serviceName: String
    var publishedName: String?
    var browsesOwnType = false // Its own service type browsed (once, after its first publication).
    var rivals = RivalMasters() // Other masters of this store its browse found (MasterNode+Rivals.swift).
    var avahiState: AvahiState
    /// The TCP port terminals connect to (the one bound when the configuration asked for 0).
    public let port: UInt16
    var maintenanceTimer: TimerHandle?
    /// The master's static keys: the current one and, after a rotation, the previous one.
    var keys: MasterKeys
    /// The pairing windows (`ordersync pair`), and the timer that closes the next to expire.
    var pairing = PairingWindows()
    var pairingTimer: TimerHandle?
    var shuttingDown = false
    /// Called when the shutdown is complete, instead of stopping the loop (a `Node` then decides
    /// what follows); nil: the loop stops.
    var onShutdownComplete: (() -> Void)?
    /// Before authentication: the slots and memory of unauthenticated connections, the
    /// handshake rate per address and in total, and the cost of handshakes for the log.
    let preAuthentication: PreAuthenticationBudget
    var handshakeLimiter: HandshakeRateLimiter
    var handshakeLedger = HandshakeLedger(linesPerInterval: NodeDefaults.handshakeFailureLines)
    var handshakeSummaryTimer: TimerHandle?
    /// Group commit: the work waiting for the next group and the one being committed.
    var group = GroupCommitState()
    /// Snapshot reads waiting for the group in flight, and the thread they read on.
    var snapshotReads = SnapshotReads()
    /// Local API writes waiting for standbys (`--sync-replicas`).
    var replicas = ReplicaWaitState()
    /// The change feed (`GET /v1/changes`), from the journal.
    var changeFeed: ChangeFeedHub?
    var feedSource: MasterFeedSource?
    let startedAt = Date()
    /// systemd's notifications (`READY=1` once published and listening, watchdog pings).
    let serviceManager: ServiceManager
    /// What `GET /metrics` shows, counted on the loop (`NodeMetrics`).
    let metrics = NodeMetrics(role: .master, version: NodeVersion.string)
    /// `--http-listen`: the store dashboard (nil: off; `frontEnds.dashboard`).
    var dashboard: DashboardServer? { frontEnds.dashboard }
    /// The dashboard's tokens (digests only), as stored in the database.
    var dashboardTokens = DashboardTokens()
    /// Withdrawing and announcing the service again after a StorePOS link was lost.
    var storePOSReannounce = StorePOSReannounce()
    /// A master on `loop` (not running yet, on the thread that will run it), serving the store
    /// of `dataDirectory` and publishing it through `discovery` (nil: not published). Binds the
    /// terminals' port; nothing is served before `run()`.
    public convenience init(
        configuration: NodeConfiguration, loop: EventLoop, dataDirectory: DataDirectory,
        discovery: (any ServiceDiscovery)?, logger: Logger
    ) throws {
        try self.init(
            configuration: configuration, loop: loop, dataDirectory: dataDirectory, discovery: discovery, logger: logger,
            seat: nil, promotion: nil)
    }

    /// A master on `loop`, as above; on the `seat` of the role it takes over (nil: a seat of its
    /// own on `dataDirectory`), and a candidate of `promotion` (nil: a master proper); serving
    /// terminals, metrics and the dashboard on the `ports` its start bound (nil: it binds the
    /// configured ports itself).
    init(
        configuration: NodeConfiguration, loop: EventLoop, dataDirectory: DataDirectory,
        discovery: (any ServiceDiscovery)?, logger: Logger, seat handedOver: RoleSeat?, promotion: MasterCandidacy?,
        ports: StartupPorts? = nil
    ) throws {
        let (trace, traceFailure) = GroupStageTrace.open(environment: ProcessInfo.processInfo.environment)
        if let traceFailure { throw NodeStartupError(traceFailure, failure: .settings) }
        self.configuration = configuration
        self.loop = loop
        self.discovery = discovery
        let writer = handedOver?.writer ?? StoreWriter(store: dataDirectory.store, loop: loop, label: "master")
        if let promotion {
            // A candidate persists nothing: the store id and the lineage are the replica's.
            storeId = promotion.store
        } else {
            let savedStore = try writer.read { try $0.metadata("store.id") }
            if let wanted = configuration.store, let saved = savedStore, wanted != saved {
                throw NodeStartupError(
                    "\(configuration.dataDirectory) holds store '\(saved)', not '\(wanted)'; use another --data-dir or drop --store",
                    failure: .storeMismatch)
            }
            storeId = try writer.identity(key: "store.id") {
                configuration.store ?? String(UUID().uuidString.lowercased().prefix(8))
            }
        }
        candidacy = promotion
        terminalName = configuration.name ?? DataDirectory.hostName()
        if promotion == nil { Self.claimMembership(writer, identity: dataDirectory.nodeIdentity, name: terminalName, logger: logger) }
        // A promoted node admitting StorePOS apps is published as the name they look for.
        serviceName =
            promotion != nil && configuration.insecureStorePOS ? NodeDefaults.storePOSServiceName : configuration.serviceInstanceName
        keys = try MasterKeys(current: dataDirectory.nodeIdentity, previousPath: configuration.previousKeyPath)
        let lineage = try promotion?.lineage ?? writer.read { try $0.metadata(MasterCandidacy.lineageKey) ?? $0.databaseEpoch() }
        engine = try MasterEngine(store: writer.masterStore(), storeId: storeId, epoch: lineage)
        term = try promotion?.term ?? writer.read { Self.storedTerm(try $0.metadata(MasterCandidacy.termKey)) }
        // The stable seq already on disk: the groups only ever raise it (PROTOCOL 7.18).
        engine.rollup.stableSeq = try writer.read { Int64(try $0.metadata(StableSeq.metadataKey) ?? "") ?? 0 }
        engine.snapshotChunk = NodeDefaults.snapshotChunk
        engine.pacesSnapshots = true
        engine.maxHeldSnapshotBytes = configuration.maxHeldSnapshotBytes
        // Every message of a broadcast fits what a terminal accepts; a whole broadcast fits one
        // link's send buffer, and a catch-up half of it (beyond, the paced snapshot).
        engine.broadcastPartBytes = NodeDefaults.broadcastPartBytes
        engine.maxBroadcastBytes = configuration.maxPendingSendBytes
        engine.maxCatchUpBytes = configuration.maxPendingSendBytes / 2
        engine.logsEachOperation = logger.logLevel <= .debug
        engine.rateLimit = RateLimit(operationsPerSecond: configuration.rateLimitPerSecond, burst: configuration.rateLimitBurst)
        preAuthentication = PreAuthenticationBudget(
            memoryBytes: configuration.preAuthenticationMemoryBytes,
            headBytes: configuration.webSocketConfiguration.maxHandshakeHeaderBytes,
            messageBytes: configuration.preAuthenticationMessageBytes, maxConnections: configuration.maxConnections,
            reservedForAuthenticated: configuration.reservedConnections)
        handshakeLimiter = HandshakeRateLimiter(
            perAddress: configuration.handshakeRatePerAddress, total: configuration.handshakeRateTotal,
            now: loop.now.sinceBoot.wholeMilliseconds)
        engine.limits = configuration.terminalLimits
        terminals = TerminalRegistry(
            maxHandshakesPerAddress: configuration.maxHandshakesPerAddress,
            maxConnectionsPerAddress: configuration.maxConnectionsPerAddress)
        var logger = logger
        logger[metadataKey: "store"] = "\(storeId)"
        self.logger = logger
        serviceManager = ServiceManager(loop: loop, logger: logger)
        avahiState = discovery == nil ? .notUsed : .starting

        let listener = try ports?.terminals ?? Self.bindTerminalPort(configuration)
        port = listener.localPort
        // Connections queue in the backlog until `run()` sets the handler and the loop turns.
        acceptor = try Acceptor(listener: listener, loop: loop) { accepted in accepted.socket.close() }
        seat = try handedOver ?? RoleSeat.own(configuration, loop, logger, dataDirectory: dataDirectory, writer: writer, ports: ports)
        // Snapshots read their orders a page at a time, off the loop (`PagedSnapshotRead`).
        engine.pagedSnapshots = { [unowned self] seq in self.openSnapshotRead(at: seq) }
        if let trace {
            group.trace = trace
            loop.stampsTurns = true
            writer.stampsCommits = true
        }
    }

    /// Starts everything and serves until SIGINT, SIGTERM or a request through
    /// ``shutdownHandle``; then shuts down cleanly. Runs the loop on the calling thread, as a
    /// ``Node`` in the master role.
    public func run() throws {
        try Node(.master(self)).run()
    }

    /// What other threads use to ask this master to shut down as on SIGTERM (`Sendable`). Take it
    /// on the thread that owns the loop, before `run()` or on the loop.
    public var shutdownHandle: NodeShutdownHandle {
        NodeShutdownHandle(loop: loop) { [weak self] reason in self?.beginShutdown(reason: reason) }
    }

    /// Starts the master's listeners, front-ends, discovery and signal handlers on its loop (not
    /// running yet); once, from `run()` or the `Node` playing this role.
    func start() throws {
        let openFiles = ResourceLimits.raiseOpenFilesLimit()
        acceptor.onAccept = { [weak self] accepted in self?.terminalConnected(accepted) }
        // Out of descriptors (EMFILE/ENFILE): the connection stays queued; the acceptor pauses
        // instead of spinning on a readable listener.
        acceptor.backoff = NodeDefaults.acceptPause
        acceptor.onError = { [weak self] error in
            self?.logger.error(
                "peer.accept_failed",
                metadata: [
                    "error": "\(error)",
                    "retry_ms": "\(NodeDefaults.acceptPause.wholeMilliseconds)",
                ])
        }
        api.masterHandler = { [weak self] route, respond in self?.handleMasterAPI(route, respond) }
        try startChangeFeed()
        try loadDashboardTokens()
        try frontEnds.start(
            configuration, handler: { [weak self] route, respond in self?.handleAPI(route, respond) },
            metrics: { [weak self] in self?.renderMetrics() ?? [] }, dashboard: self)

        logger.info(
            "node.started",
            metadata: [
                "role": "master", "version": "\(NodeVersion.string)", "data_dir": "\(configuration.dataDirectory)",
                "node.id": "\(nodeIdentity.nodeId)",
                "name": "\(terminalName)", "port": "\(port)", "listen": "\(configuration.listenAddress)",
                "service_type": "\(configuration.serviceType)", "epoch": "\(engine.epoch)", "seq": "\(engine.lastSeq)",
                "orders": "\((try? writer.read { try $0.orderCount() }) ?? 0)", "api.socket": "\(configuration.socketPath)",
                "max_connections": "\(configuration.maxConnections)", "open_files_limit": "\(openFiles)",
                "paired_terminals": "\((try? servedTerminals().count) ?? 0)",
                "metrics.listen": "\(frontEnds.metricsListener?.localAddress ?? "-")",
                "http.listen": "\(dashboard?.localAddress ?? "-")",
                "http.tls": "\(dashboard?.tlsFingerprint ?? "-")",
            ])
        if configuration.insecureStorePOS {
            let ranges = configuration.storePOSAllow.map(\.description).joined(separator: ",")
            logger.warning(
                "storepos.insecure",
                metadata: [
                    "allow": "\(ranges.isEmpty ? "any address" : ranges)",
                    "hint": "StorePOS terminals are admitted in the clear, neither authenticated nor encrypted",
                ])
            if configuration.name == nil {
                logger.info(
                    "storepos.service_name",
                    metadata: [
                        "service.name": "\(serviceName)",
                        "hint": "StorePOS apps connect only to the instance named \(NodeDefaults.storePOSServiceName); --name sets another",
                    ])
            } else if !NodeConfiguration.storePOSAppFinds(serviceName) {
                logger.warning(
                    "storepos.service_name",
                    metadata: [
                        "service.name": "\(serviceName)",
                        "hint":
                            "StorePOS apps connect only to the instance named \(NodeDefaults.storePOSServiceName) and will not find this master",
                    ])
            }
        }

        startDiscovery()
        reportReadiness()
        announceMembers()
        if let candidacy { startCandidacy(candidacy) }
    }

    private func startDiscovery() {
        guard let discovery else { return }
        let loop = self.loop
        do {
            // Avahi's callbacks run on its own thread: they only hop onto the loop.
            let node = LoopBound(self, loop: loop)
            try discovery.start { event in
                loop.execute { node.value.handleDiscovery(event) }
            }
            publishService()
        } catch {
            avahiState = .unavailable
            logger.warning(
                "avahi.unavailable",
                metadata: [
                    "error": "\(error)",
                    "hint": "terminals must use --master ws://HOST:\(port)/ until avahi-daemon runs",
                ])
        }
    }

    /// Publishes (or replaces) the service: its TXT record names the master's key (`id=`) and,
    /// after a rotation, the previous one (`previd=`).
    func publishService() {
        guard let discovery, avahiState != .unavailable else { return }
        var txt = [
            ("proto", orderSyncProtocolName), ("store", storeId), ("epoch", engine.epoch),
            ("path", NodeDefaults.webSocketPath), ("id", keys.current.nodeId),
        ]
        if let previous = keys.previous { txt.append(("previd", previous.nodeId)) }
        txt.append(contentsOf: termTXT)
        discovery.publish(ServiceAnnouncement(name: serviceName, type: configuration.serviceType, port: port, txt: txt))
    }

    private func handleDiscovery(_ event: DiscoveryEvent) {
        loop.assertInEventLoop()
        noteRivals(event)
        switch event {
        case .daemonAvailable:
            avahiState = .up
            logger.info("avahi.up")
        case .daemonUnavailable(let reason):
            avahiState = .down
            publishedName = nil
            serviceManager.status(readinessStatus + " (not published: Avahi down)")
            logger.warning(
                "avahi.down",
                metadata: [
                    "reason": "\(reason)",
                    "hint": "still serving on port \(port); publishing again when avahi-daemon is back",
                ])
        case .published(let name):
            // Its own service type, browsed once its name is settled (a browse started while
            // Avahi probes the name can let a colliding name through): a member of the store
            // announcing a higher term makes it step down.
            if !browsesOwnType { discovery?.browse(type: configuration.serviceType) }
            browsesOwnType = true
            publishedName = name
            serviceManager.ready(status: readinessStatus)
            logger.info(
                "service.published",
                metadata: [
                    "service.name": "\(name)", "service.type": "\(configuration.serviceType)",
                    "port": "\(port)",
                ])
        case .nameCollision(let old, let new):
            logger.warning("service.name_collision", metadata: ["service.name": "\(old)", "service.new_name": "\(new)"])
            if configuration.insecureStorePOS, NodeConfiguration.storePOSAppFinds(old), !NodeConfiguration.storePOSAppFinds(new) {
                logger.warning(
                    "storepos.name_changed",
                    metadata: [
                        "service.name": "\(old)", "service.new_name": "\(new)",
                        "hint":
                            "another device on the LAN publishes \(old) (a StorePOS master app, or a second master?): StorePOS apps look only for \(old) and will not find this master as \(new); stop the other one and restart this master",
                    ])
            }
        case .publishFailed(let reason):
            logger.error("service.publish_failed", metadata: ["reason": "\(reason)"])
            serviceManager.ready(status: readinessStatus + " (publishing failed: \(reason))")
        case .serviceFound(let service):
            considerStepDown(service)
        case .serviceLost, .browseFailed:
            break
        }
    }

    func beginShutdown(reason: String) {
        loop.assertInEventLoop()
        guard !shuttingDown else { return }
        shuttingDown = true
        // A hand-over is no stop: the next role reports itself ready.
        if !seat.handingOver { serviceManager.stopping() }
        logger.info("node.stopping", metadata: ["signal": "\(reason)", "peers": "\(sessions.count)"])
        acceptor.close()
        // Withdraw the service first, so no slave picks a master that no longer accepts.
        discovery?.unpublish()
        changeFeed?.stop()
        seat.stopFrontEnds()
        for s in terminals.close() { s.close(code: .goingAway, reason: "master shutting down") }
        if sessions.isEmpty {
            shutdownComplete()
        } else {
            // Peers answer the close within milliseconds; do not wait for a dead one.
            _ = loop.schedule(after: NodeDefaults.shutdownGrace) { [weak self] in self?.shutdownComplete() }
        }
    }

    /// The role's shutdown is complete (its links closed, its front-ends stopped): tells the
    /// owner (``onShutdownComplete``, set by a `Node`), or stops the loop when run alone.
    func shutdownComplete() {
        loop.assertInEventLoop()
        if let onShutdownComplete { onShutdownComplete() } else { loop.stop() }
    }

    func sessionEnded() {
        if terminals.isDrained { shutdownComplete() }
        if sessions.isEmpty, let t = maintenanceTimer {
            loop.cancel(t)
            maintenanceTimer = nil
        }
    }

    /// The last of the shutdown, once the loop no longer runs the role: what is still being
    /// written is committed, discovery stops and the data directory is closed.
    func finishShutdown() {
        finishGroups()
        dropReplicaWaits()
        logHandshakeSummaries()
        discovery?.stop()
        seat.close()
        logger.info("node.stopped", metadata: ["seq": "\(engine.lastSeq)"])
    }
}
