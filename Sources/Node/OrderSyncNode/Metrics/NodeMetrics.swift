import CoreMetrics
import NodePolicy
import Prometheus
import SyncCore
import WebSocketTransport

/// The node's metrics (Docs/OPERATIONS.md, "Metrics"): swift-metrics objects backed by a
/// Prometheus registry of the node's own, exposed as `GET /metrics`.
///
/// The hot path never touches them: the node counts on its loop in plain integers (`counts`,
/// and each link's `TrafficCounts`), and what changed is handed to the metrics objects when the
/// exposition is rendered (on the loop too). Gauges are set from the node's status at that
/// moment, so a terminal that is revoked or forgotten loses its series with it. Only the commit
/// latency is recorded as it happens, once per group.
final class NodeMetrics {
    /// What the node counts on its loop.
    struct Counts {
        /// Operations applied, by `OperationKind.rawValue`.
        var applied = [Int](repeating: 0, count: OperationKind.allCases.count)
        /// Attempts to reach the master (slave) and the ones that got a secure link up.
        var linkAttempts = 0
        var linkUps = 0
        /// Commits that failed (group or batch).
        var commitFailures = 0
        /// Local API writes answered `"replicated": false` (master).
        var unreplicatedWrites = 0
        /// What the links that ended carried.
        var endedTraffic = TrafficCounts()
    }

    /// The gauges' values at the moment of a scrape, read from the node's status.
    struct Snapshot {
        /// The master's journal sequence, or the last one a slave applied.
        var seq: Int64
        /// Operations refused since start, by code (master).
        var refusals: [WireErrorCode: Int] = [:]
        /// Connected terminals by protocol (master).
        var connected: [MasterStatus.PeerProtocol: Int] = [:]
        /// Operations each known slave is behind, and the changes its outbox held when it last
        /// said (nil: never), by terminal id (master).
        var terminals: [TerminalGauges] = []
        /// Changes in the outbox, operations behind the master (nil: unknown, not live), and
        /// whether the link is live (slave).
        var outbox = 0
        var lag: Int64? = 0
        var linkLive = false
        /// What the open links carried so far.
        var liveTraffic = TrafficCounts()
        /// The node's term (`sync.term`; 1 until a promotion).
        var term: Int64 = 1
        /// Operations each connected standby's copy lacks (master seq − its `held`), by terminal.
        var standbyLag: [(id: String, name: String, value: Int64)] = []
        /// Readiness, rivals, each paired terminal's presence and the process (`HealthMetrics`).
        var health = HealthGauges()
    }

    let role: NodeRole
    let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory
    /// Bumped on the loop; read at scrape time.
    var counts = Counts()
    /// `ordersync_terminal_clock_offset_seconds` by terminal id (`NodeMetrics+Clock.swift`).
    var clockSeries: [String: (name: String, gauge: Prometheus.Gauge)] = [:]
    /// What the metrics objects were last given.
    private var flushed = Counts()
    private var flushedTraffic = TrafficCounts()
    private var flushedRefusals: [WireErrorCode: Int] = [:]

    private let applied: [CoreMetrics.Counter]
    private let refused: [WireErrorCode: CoreMetrics.Counter]
    private let connected: [MasterStatus.PeerProtocol: Meter]
    private lazy var terminalLag = PerTerminalGauge(
        registry: registry, factory: factory, name: "terminal_lag",
        help: "Operations a known slave has not acknowledged, by terminal id and name.")
    private lazy var terminalOutbox = PerTerminalGauge(
        registry: registry, factory: factory, name: "terminal_outbox",
        help: "Changes waiting in a known slave's outbox, as it last said (acks, hello), by terminal id and name.")
    private let seq: Meter
    private let outbox: Meter?
    private let slaveLag: Meter?
    private let linkLive: Meter?
    private let linkAttempts: CoreMetrics.Counter?
    private let linkUps: CoreMetrics.Counter?
    private let commitFailures: CoreMetrics.Counter
    private let unreplicatedWrites: CoreMetrics.Counter?
    private let term: Meter
    private lazy var standbyLag = PerTerminalGauge(
        registry: registry, factory: factory, name: "standby_lag",
        help: "Operations a connected standby's copy lacks (master seq minus its held), by terminal id and name.")
    private let commitDuration: CoreMetrics.Timer
    private lazy var health = HealthMetrics(registry: registry, factory: factory, role: role)
    private let bytesIn, bytesOut, messagesIn, messagesOut: CoreMetrics.Counter

    /// Buckets of the commit latency: 0.5 ms to 2.5 s.
    static let commitBuckets: [Duration] = [
        .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25),
        .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2.5),
    ]

    init(role: NodeRole, version: String) {
        self.role = role
        let registry = self.registry
        let factory = PrometheusMetricsFactory(registry: registry)
        self.factory = factory
        func descriptor(_ name: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
            MetricNameDescriptor(namespace: "ordersync", metricName: name, unitName: unit, helpText: help)
        }
        func counter(_ name: String, _ unit: String, _ help: String, _ labels: [(String, String)] = []) -> CoreMetrics.Counter {
            let d = descriptor(name, unit, help)
            return CoreMetrics.Counter(
                label: d.name, dimensions: labels, handler: registry.makeCounter(descriptor: d, labels: labels), factory: factory)
        }
        func meter(_ name: String, _ unit: String, _ help: String, _ labels: [(String, String)] = []) -> Meter {
            let d = descriptor(name, unit, help)
            return Meter(label: d.name, dimensions: labels, handler: registry.makeGauge(descriptor: d, labels: labels), factory: factory)
        }
        Self.meterInfo(registry: registry, factory: factory, role: role, version: version)
        seq = meter(
            "journal", "seq",
            role == .master ? "The last sequence number of the master's journal." : "The last journal sequence applied to the replica.")
        term = meter("term", "", "The node's term: 1 until a promotion, raised by each.")
        bytesIn = counter("received", "bytes_total", "WebSocket frame bytes received on sync links (handshakes not counted).")
        bytesOut = counter("sent", "bytes_total", "WebSocket frame bytes sent on sync links (handshakes not counted).")
        messagesIn = counter("received_messages", "total", "WebSocket messages received on sync links.")
        messagesOut = counter("sent_messages", "total", "WebSocket messages sent on sync links.")
        commitFailures = counter(
            "commit_failures", "total", "Store commits (master groups, replica batches) that failed and were rolled back.")
        let d = descriptor(
            "commit_duration", "seconds",
            role == .master
                ? "From the start of a group of operations to its commit on disk (group commit)."
                : "From the first message of a batch of the master's messages to its commit on disk.")
        commitDuration = CoreMetrics.Timer(
            label: d.name, dimensions: [],
            handler: registry.makeDurationHistogram(descriptor: d, buckets: Self.commitBuckets), factory: factory)
        if role == .master {
            applied = OperationKind.allCases.map {
                counter("operations_applied", "total", "Operations applied and journalled, by operation.", [("op", "\($0)")])
            }
            var refused: [WireErrorCode: CoreMetrics.Counter] = [:]
            for code in WireErrorCode.allCases {
                refused[code] = counter(
                    "operations_refused", "total", "Orders of operations refused, by error code.", [("code", code.rawValue)])
            }
            self.refused = refused
            var connected: [MasterStatus.PeerProtocol: Meter] = [:]
            for p in [MasterStatus.PeerProtocol.ordersync, .storepos] {
                connected[p] = meter("terminals_connected", "", "Terminals connected now, by protocol.", [("protocol", p.rawValue)])
            }
            self.connected = connected
            unreplicatedWrites = counter(
                "unreplicated_writes", "total",
                "Local API writes answered \"replicated\": false: no standby held them within --sync-timeout, or none was connected.")
            outbox = nil
            slaveLag = nil
            linkLive = nil
            linkAttempts = nil
            linkUps = nil
        } else {
            applied = []
            refused = [:]
            connected = [:]
            unreplicatedWrites = nil
            outbox = meter("outbox", "operations", "Local changes in the outbox, waiting for the master.")
            slaveLag = meter("lag", "operations", "Operations the replica is behind the master's head; NaN while the link is not live.")
            linkLive = meter("master_link", "live", "1 while the link to the master is live (synced), else 0.")
            linkAttempts = counter("master_connect_attempts", "total", "Attempts to reach the master.")
            linkUps = counter("master_connects", "total", "Links to the master that got through the hello to synced (the master's ready).")
        }
    }

    /// `ordersync_node_info{role,version} 1`.
    private static func meterInfo(
        registry: PrometheusCollectorRegistry, factory: PrometheusMetricsFactory, role: NodeRole, version: String
    ) {
        let d = MetricNameDescriptor(
            namespace: "ordersync", metricName: "node", unitName: "info", helpText: "The node's role and version (always 1).")
        let labels = [("role", role.rawValue), ("version", version)]
        Meter(label: d.name, dimensions: labels, handler: registry.makeGauge(descriptor: d, labels: labels), factory: factory).set(1)
    }

    /// Serves `GET /metrics` with what `render` returns on the local API socket and, with
    /// `--metrics-listen`, on `listener`.
    static func serve(api: LocalAPIServer, listener: MetricsListener?, render: @escaping () -> [UInt8]) {
        api.metrics = render
        listener?.start(render: render)
    }

    /// Records one commit's latency (once per group or batch, on the loop).
    func recordCommit(_ duration: Duration, failed: Bool) {
        commitDuration.recordNanoseconds(
            Int64(duration.components.seconds) * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
        if failed { counts.commitFailures += 1 }
    }

    /// The Prometheus text exposition (format 0.0.4) after handing what changed to the
    /// metrics objects.
    func render(_ snapshot: Snapshot) -> [UInt8] {
        flush(snapshot)
        var out: [UInt8] = []
        registry.emit(into: &out)
        return out
    }

    private func flush(_ s: Snapshot) {
        func add(_ counter: CoreMetrics.Counter?, _ now: Int, _ before: Int) {
            if now > before { counter?.increment(by: now - before) }
        }
        for (i, c) in applied.enumerated() { add(c, counts.applied[i], flushed.applied[i]) }
        for (code, n) in s.refusals { add(refused[code], n, flushedRefusals[code] ?? 0) }
        flushedRefusals = s.refusals
        add(linkAttempts, counts.linkAttempts, flushed.linkAttempts)
        add(linkUps, counts.linkUps, flushed.linkUps)
        add(commitFailures, counts.commitFailures, flushed.commitFailures)
        add(unreplicatedWrites, counts.unreplicatedWrites, flushed.unreplicatedWrites)
        var traffic = counts.endedTraffic
        traffic.add(s.liveTraffic)
        add(bytesIn, traffic.bytesIn, flushedTraffic.bytesIn)
        add(bytesOut, traffic.bytesOut, flushedTraffic.bytesOut)
        add(messagesIn, traffic.messagesIn, flushedTraffic.messagesIn)
        add(messagesOut, traffic.messagesOut, flushedTraffic.messagesOut)
        flushed = counts
        // A link's counts move into `endedTraffic` when it ends: the sum never goes back.
        flushedTraffic = TrafficCounts.max(flushedTraffic, traffic)

        seq.set(s.seq)
        term.set(s.term)
        for (p, m) in connected { m.set(s.connected[p] ?? 0) }
        outbox?.set(s.outbox)
        slaveLag?.set(s.lag.map { Double($0) } ?? .nan)
        health.set(s.health)
        linkLive?.set(s.linkLive ? 1 : 0)
        guard role == .master else { return }
        terminalLag.set(s.terminals.map { ($0.id, $0.name, $0.lag) })
        terminalOutbox.set(s.terminals.compactMap { t in t.outbox.map { (t.id, t.name, Int64($0)) } })
        standbyLag.set(s.standbyLag)
    }

    /// What the master knows of one slave, for its per-terminal gauges.
    struct TerminalGauges {
        var id: String
        var name: String
        var lag: Int64
        var outbox: Int?
    }
}

/// One gauge per known slave; a terminal no longer known (revoked, forgotten, or with no value)
/// loses its series, so the label set stays that of the paired terminals.
final class PerTerminalGauge {
    private let registry: PrometheusCollectorRegistry
    private let factory: PrometheusMetricsFactory
    private let descriptor: MetricNameDescriptor
    private var byTerminal: [String: (name: String, meter: Meter)] = [:]

    init(
        registry: PrometheusCollectorRegistry, factory: PrometheusMetricsFactory, name: String, unit: String = "operations", help: String
    ) {
        self.registry = registry
        self.factory = factory
        descriptor = MetricNameDescriptor(namespace: "ordersync", metricName: name, unitName: unit, helpText: help)
    }

    func set(_ list: [(id: String, name: String, value: Int64)]) {
        var seen = Set<String>()
        for t in list {
            seen.insert(t.id)
            if let entry = byTerminal[t.id], entry.name == t.name {
                entry.meter.set(t.value)
                continue
            }
            byTerminal[t.id]?.meter.destroy()
            let labels = [("terminal", t.id), ("name", t.name)]
            let meter = Meter(
                label: descriptor.name, dimensions: labels, handler: registry.makeGauge(descriptor: descriptor, labels: labels),
                factory: factory)
            meter.set(t.value)
            byTerminal[t.id] = (t.name, meter)
        }
        for (id, entry) in byTerminal where !seen.contains(id) {
            entry.meter.destroy()
            byTerminal[id] = nil
        }
    }
}

extension TrafficCounts {
    /// The larger of each count.
    static func max(_ a: TrafficCounts, _ b: TrafficCounts) -> TrafficCounts {
        var m = TrafficCounts()
        m.bytesIn = Swift.max(a.bytesIn, b.bytesIn)
        m.bytesOut = Swift.max(a.bytesOut, b.bytesOut)
        m.messagesIn = Swift.max(a.messagesIn, b.messagesIn)
        m.messagesOut = Swift.max(a.messagesOut, b.messagesOut)
        return m
    }
}
