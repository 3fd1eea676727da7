import Discovery
import EventLoopIO
import Foundation
import Logging
import NodePolicy
import Noise
import OrderStore
import SyncCore
import WebSocket

/// `ordersync slave`: finds the store's master through DNS-SD (or `--master`), keeps a replica
/// of its orders in SQLite, and forwards the terminal's own changes to the master.
///
/// Built whole from its event loop, its claimed data directory (the store) and its discovery.
///
/// Not `Sendable`: every stored property is touched only on the loop's thread. Other threads
/// reach it through ``shutdownHandle`` and, for discovery events, a `LoopBound` hop.
public final class SlaveNode {
    let configuration: NodeConfiguration
    var logger: Logger
    let loop: EventLoop
    /// The data directory, the store's writer and the front-ends, kept by the node from one role
    /// to the next (a promotion, a step-down).
    let seat: RoleSeat
    var dataDirectory: DataDirectory { seat.dataDirectory }
    /// The one writer of the replica: batches committed off the loop, reads, writes.
    var writer: StoreWriter { seat.writer }
    var engine: SlaveEngine
    /// The local API and `--metrics-listen`, started and stopped together.
    var frontEnds: FrontEnds { seat.frontEnds }
    /// The local API socket (`frontEnds.api`).
    var api: LocalAPIServer { frontEnds.api }
    let discovery: (any ServiceDiscovery)?
    let terminalId: String
    let terminalName: String
    /// The node key as the Noise handshakes use it.
    let localStatic: NoiseKeyPair
    /// Where this terminal stands with its master's key (`DATA/master.trust`); changed by a
    /// pairing, a key handover, or the master refusing the terminal.
    var trust: SlaveTrust
    /// Set when the slave must stop for good (the master refused the pairing code): `run()`
    /// throws it after shutting down.
    var exitError: NodeStartupError?
    /// Attempts the master refused because it does not know this terminal, in a row.
    var refusedAttempts = 0
    var avahiState: AvahiState
    var shuttingDown = false
    /// Called when the shutdown is complete, instead of stopping the loop (a `Node` then decides
    /// what follows); nil: the loop stops.
    var onShutdownComplete: (() -> Void)?
    let startedAt = Date()
    /// systemd's notifications (`READY=1` once the store is open and the API listens).
    let serviceManager: ServiceManager

    /// Masters seen on the LAN and how attempts on them went.
    var candidates = MasterCandidates()
    /// The highest term this slave followed or promised (`sync.term`; 1 when absent).
    var followedTerm: Int64 = 1
    /// True while the trusted master is a candidate followed in memory only (a pre-vote).
    var followsUnsaved = false
    /// A member's higher term being tried, not yet proven (restored from when it fails).
    var termTry: TermTry?
    /// Announcements whose term was not proven, held back for a while.
    var unprovenTerms = UnprovenTerms()
    var lastStoreChoiceLog = ""
    /// A slave that knows no store waits this long after the first master it sees, so that it
    /// sees every store on the LAN before it joins one.
    var storeChoiceSettled = false
    var settleTimer: TimerHandle?

    /// The link to the master: one state, changed only by `enter(_:)`.
    private(set) var linkState = SlaveLinkState.idle
    /// When the link entered its state, on the loop's clock.
    private(set) var linkSince: MonotonicInstant
    /// Why the last link ended or the last attempt failed.
    var lastLinkError: String?
    /// When the link was last live (when the node started, before it ever was); nil while live.
    private(set) var notLiveSince: MonotonicInstant?
    /// Delays between attempts to reach the master.
    var reconnectBackoff: ReconnectBackoff
    var pendingWrites: [String: PendingWrite] = [:]
    var retryFlushTimer: TimerHandle?
    /// The shutdown's deadline for a master that does not answer the close; cancelled once the
    /// shutdown completed (a hand-over's next role must not be stopped by it).
    var shutdownGraceTimer: TimerHandle?
    var ackTimer: TimerHandle?
    /// The master's messages of this loop turn, applied in one transaction (`SlaveNode+Batch.swift`).
    var batch: SlaveBatch?
    /// The master's messages that arrived while the last batch committed, for the next one.
    var waitingMessages: [DecodedMasterMessage] = []
    /// Decodes the master's large messages off the loop, handing them back in order.
    lazy var decoder = MasterMessageDecoder(loop: loop) { [weak self] in self?.masterMessage($0) }
    var replicaCommits = ReplicaCommitStatus()
    /// What `GET /metrics` shows, counted on the loop (`NodeMetrics`).
    let metrics = NodeMetrics(role: .slave, version: NodeVersion.string)
    /// Failed attempts to reach the master, summarised in the log (`master.connect_failed`).
    var connectFailures: FailureSummary
    /// The change feed (`GET /v1/changes`), from the replica's feed table.
    var changeFeed: ChangeFeedHub?
    /// `--auto-failover`: when to stand for election (`SlaveNode+AutoFailover.swift`); nil: off.
    var autoFailover: AutoFailoverWatch?

    /// A slave on `loop` (not running yet, on the thread that will run it), keeping its replica
    /// in `dataDirectory` and finding its master through `discovery` (nil: only
    /// `configuration.masterURL`). Nothing starts before `run()`.
    public convenience init(
        configuration: NodeConfiguration, loop: EventLoop, dataDirectory: DataDirectory,
        discovery: (any ServiceDiscovery)?, logger: Logger,
        reconnectJitter: ReconnectBackoff.Jitter = .downToHalf()
    ) throws {
        try self.init(
            configuration: configuration, loop: loop, dataDirectory: dataDirectory, discovery: discovery, logger: logger,
            reconnectJitter: reconnectJitter, seat: nil)
    }

    /// A slave on `loop`, as above, on the `seat` of the role it takes over (nil: a seat of its
    /// own on `dataDirectory`): a candidate withdrawing, a master stepping down. Serves
    /// `--metrics-listen` on the socket its start bound (`ports`; nil: it binds it itself).
    init(
        configuration: NodeConfiguration, loop: EventLoop, dataDirectory: DataDirectory,
        discovery: (any ServiceDiscovery)?, logger: Logger,
        reconnectJitter: ReconnectBackoff.Jitter, seat handedOver: RoleSeat?, ports: StartupPorts? = nil
    ) throws {
        self.configuration = configuration
        self.loop = loop
        self.discovery = configuration.masterURL == nil ? discovery : nil
        let writer = handedOver?.writer ?? StoreWriter(store: dataDirectory.store, loop: loop, label: "slave")
        dataDirectory.store.database.rollupCheckpoint = Self.standbyRollupCheckpoint(dataDirectory: dataDirectory.path)
        terminalId = try writer.identity(key: "terminal.id") { UUID().uuidString.lowercased() }
        followedTerm = try writer.read { MasterNode.storedTerm(try $0.metadata(MasterCandidacy.termKey)) }
        terminalName = configuration.name ?? DataDirectory.hostName()
        engine = try SlaveEngine(
            store: writer.slaveStore(), terminalId: terminalId, terminalName: terminalName,
            configuredStore: configuration.store)
        if let wanted = configuration.store, let joined = engine.joinedStore, wanted != joined {
            throw NodeStartupError(
                "\(configuration.dataDirectory) is a replica of store '\(joined)', not '\(wanted)'; use another --data-dir",
                failure: .storeMismatch, fix: "use the data directory of store '\(wanted)', or drop --store")
        }
        engine.logsOwnOperations = logger.logLevel <= .info
        var logger = logger
        if let s = configuration.store ?? engine.joinedStore { logger[metadataKey: "store"] = "\(s)" }
        self.logger = logger
        serviceManager = ServiceManager(loop: loop, logger: logger)
        let (trust, codeUse) = try SlaveTrust.atStart(
            trust: try MasterTrust.load(path: configuration.masterTrustPath), code: configuration.pairingCode)
        self.trust = trust
        do {
            localStatic = try NoiseKeyPair(privateKey: Array(dataDirectory.nodeIdentity.privateKey.rawRepresentation))
        } catch {
            throw NodeStartupError("the node key cannot be used for Noise: \(error)", failure: .damagedFile)
        }
        switch codeUse {
        case .ignoredAlreadyPaired:
            logger.info(
                "pairing.already_paired",
                metadata: [
                    "master.id": "\(trust.current?.master ?? "-")",
                    "hint": "this terminal was paired with this code; the code is ignored and can be dropped from the command",
                ])
        case .pairAnew:
            logger.info("pairing.anew", metadata: ["master.id": "\(trust.current?.master ?? "-")"])
        case .none:
            break
        }
        avahiState = configuration.masterURL != nil ? .notUsedWithFixedMaster : (discovery == nil ? .notUsed : .starting)
        linkSince = loop.now
        notLiveSince = loop.now
        reconnectBackoff = ReconnectBackoff(
            initial: NodeDefaults.reconnectDelay, maximum: NodeDefaults.reconnectDelayLimit,
            jitter: reconnectJitter)
        candidates.trustedIds = trust.trustedIds
        connectFailures = FailureSummary(interval: configuration.logSummaryInterval)
        seat = try handedOver ?? RoleSeat.own(configuration, loop, logger, dataDirectory: dataDirectory, writer: writer, ports: ports)
    }

    /// A slave for the `ordersync slave` command: prepares the process (signals), claims the
    /// data directory and discovers its master through Avahi unless `--master` names it.
    /// A slave neither paired nor given a code, or whose `--metrics-listen` cannot be bound
    /// (``StartupPorts``), is refused once the lock is held and before the key or the store is
    /// made; any later failure of the start leaves the directory as it was too
    /// (``DataDirectory/abandon()``).
    public convenience init(configuration: NodeConfiguration, logger: Logger) throws {
        let loop = try NodeStartup.prepareProcess()
        var ports: StartupPorts?
        let dataDirectory = try DataDirectory(claimingFor: configuration) {
            _ = try SlaveTrust.atStart(trust: try MasterTrust.load(path: configuration.masterTrustPath), code: configuration.pairingCode)
            ports = try StartupPorts.bind(for: configuration, logger: logger)
        }
        do {
            try self.init(
                configuration: configuration, loop: loop, dataDirectory: dataDirectory,
                discovery: configuration.masterURL == nil ? AvahiServiceDiscovery() : nil, logger: logger,
                reconnectJitter: .downToHalf(), seat: nil, ports: ports)
        } catch {
            dataDirectory.abandon()
            throw error
        }
    }

    /// Starts everything and runs until SIGINT, SIGTERM or a request through ``shutdownHandle``.
    /// Runs the loop on the calling thread, as a ``Node`` in the slave role; throws why the
    /// slave had to stop (a refused pairing).
    public func run() throws {
        try Node(.slave(self)).run()
    }

    /// What other threads use to ask this slave to shut down as on SIGTERM (`Sendable`). Take it
    /// on the thread that owns the loop, before `run()` or on the loop.
    public var shutdownHandle: NodeShutdownHandle {
        NodeShutdownHandle(loop: loop) { [weak self] reason in self?.beginShutdown(reason: reason) }
    }

    /// Starts the slave's listeners, front-ends, discovery and signal handlers on its loop (not
    /// running yet); once, from `run()` or the `Node` playing this role.
    func start() throws {
        try startChangeFeed()
        try frontEnds.start(
            configuration, handler: { [weak self] route, respond in self?.handleAPI(route, respond) },
            metrics: { [weak self] in self?.renderMetrics() ?? [] }, dashboard: nil)
        api.promoteHandler = { [weak self] request, respond in self?.promote(request, respond) }
        logger.info(
            "node.started",
            metadata: [
                "role": "slave", "version": "\(NodeVersion.string)", "data_dir": "\(configuration.dataDirectory)",
                "node.id": "\(nodeIdentity.nodeId)", "master.id": "\(trust.status.masterId ?? "not paired")",
                "pairing": "\(trust.status.pairing.rawValue)",
                "name": "\(terminalName)", "terminal.id": "\(terminalId)", "service_type": "\(configuration.serviceType)",
                "master": "\(configuration.masterURL?.description ?? "discover")", "seq": "\(engine.lastSeq)",
                "orders": "\((try? writer.read { try $0.orderCount() }) ?? 0)", "api.socket": "\(configuration.socketPath)",
                "outbox": "\(engine.outboxCount)", "metrics.listen": "\(frontEnds.metricsListener?.localAddress ?? "-")",
                "http.listen": "\(frontEnds.dashboard?.localAddress ?? "-")",
            ])

        if let url = configuration.masterURL {
            connect(to: LinkTarget(url: url, serviceName: nil))
        } else {
            startDiscovery()
        }
        // A slave serves its replica and takes orders (into its outbox) without a master.
        serviceManager.startWatchdog()
        startAutoFailover()
        serviceManager.ready(status: "slave of store \(configuration.store ?? engine.joinedStore ?? "(any)"), terminal \(terminalName)")
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
            discovery.browse(type: configuration.serviceType)
            logger.info("master.searching", metadata: ["service_type": "\(configuration.serviceType)"])
        } catch {
            avahiState = .unavailable
            logger.warning(
                "avahi.unavailable",
                metadata: [
                    "error": "\(error)",
                    "hint": "waiting for avahi-daemon; or start with --master ws://HOST:PORT/",
                ])
        }
    }

    func beginShutdown(reason: String) {
        loop.assertInEventLoop()
        guard !shuttingDown else { return }
        shuttingDown = true
        // A hand-over is no stop: the next role reports itself ready.
        if !seat.handingOver { serviceManager.stopping() }
        // The master's messages received so far are committed (off the loop) first.
        afterBatch { [weak self] in self?.stop(reason: reason) }
    }

    private func stop(reason: String) {
        logger.info("node.stopping", metadata: ["signal": "\(reason)"])
        changeFeed?.stop()
        seat.stopFrontEnds()
        answerPendingWritesAsQueued()
        if let link = linkState.link {
            link.close(code: .goingAway, reason: "terminal shutting down")
            shutdownGraceTimer = loop.schedule(after: NodeDefaults.shutdownGrace) { [weak self] in
                self?.shutdownGraceTimer = nil
                self?.shutdownComplete()
            }
        } else {
            enter(.idle)
            shutdownComplete()
        }
    }

    /// The role's shutdown is complete (its links closed, its front-ends stopped): tells the
    /// owner (``onShutdownComplete``, set by a `Node`), or stops the loop when run alone.
    func shutdownComplete() {
        loop.assertInEventLoop()
        if let t = shutdownGraceTimer {
            loop.cancel(t)
            shutdownGraceTimer = nil
        }
        if let onShutdownComplete { onShutdownComplete() } else { loop.stop() }
    }

    /// Moves the link to `state`: the one place the link's state changes. Timers of the state
    /// left behind are cancelled.
    func enter(_ state: SlaveLinkState) {
        switch linkState {
        case .waiting(_, let retry):
            if case .waiting(_, let next) = state, next == retry { break }
            loop.cancel(retry)
        case .idle, .connecting, .syncing, .live:
            break
        }
        if state.name != linkState.name { linkSince = loop.now }
        if case .live = state {
            notLiveSince = nil
        } else if case .live = linkState {
            notLiveSince = loop.now
        }
        linkState = state
    }

    /// The last of the shutdown, once the loop no longer runs the role: what is still being
    /// written is committed, discovery stops and the data directory is closed.
    func finishShutdown() {
        finishBatchesAtShutdown()
        discovery?.stop()
        seat.close()
        logger.info("node.stopped", metadata: ["seq": "\(engine.lastSeq)"])
    }
}
