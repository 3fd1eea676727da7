import NodePolicy
import Prometheus

/// What the health metrics are set from at a scrape: one view of the node's status (its
/// readiness, the master's rivals and paired terminals).
struct HealthGauges {
    /// `state` is `ready`.
    var ready = false
    /// `ready.store` is `ok` (readable, and the last commit succeeded).
    var storeReady = true
    /// The master's service is confirmed by Avahi (nil on a slave).
    var published: Bool?
    /// Other masters of the store seen on the LAN (nil on a slave).
    var rivals: Int?
    /// Each paired terminal, connected or away (empty on a slave).
    var terminals: [TerminalPresence] = []
}

/// The node's health series (Docs/OPERATIONS.md, "Metrics"), on the node's own Prometheus
/// registry beside `NodeMetrics`'s: `ordersync_ready`, `ordersync_store_ready`, on a master
/// `ordersync_published`, `ordersync_rival_masters` and per paired terminal
/// `ordersync_terminal_connected` and `ordersync_terminal_last_seen_seconds`, and the
/// `process_*` series every Prometheus client exports. Set at scrape time, on the loop, from
/// the status of that moment; a terminal that is revoked loses its series, so the label set is
/// that of the paired terminals.
final class HealthMetrics {
    private let ready: Gauge
    private let storeReady: Gauge
    private let published: Gauge?
    private let rivals: Gauge?
    private let connected: PerTerminalGauge
    private let lastSeen: PerTerminalGauge
    private let cpu: Counter
    private var cpuCounted = 0.0
    private let resident, virtual, openFiles, maxFiles, startTime: Gauge

    /// The series of a node in `role`, registered in `registry` (the per-terminal ones through
    /// `factory`, as `NodeMetrics`'s).
    init(registry: PrometheusCollectorRegistry, factory: PrometheusMetricsFactory, role: NodeRole) {
        ready = registry.makeGauge(
            name: "ordersync_ready", help: "1 while status says ready: store ok and published (master) or live to its master (slave).")
        storeReady = registry.makeGauge(
            name: "ordersync_store_ready", help: "1 while the store answers reads and its last commit succeeded, else 0.")
        if role == .master {
            published = registry.makeGauge(name: "ordersync_published", help: "1 while Avahi confirms the master's service on the LAN.")
            rivals = registry.makeGauge(
                name: "ordersync_rival_masters", help: "Other masters of this store seen on the LAN (services naming its store id).")
        } else {
            published = nil
            rivals = nil
        }
        connected = PerTerminalGauge(
            registry: registry, factory: factory, name: "terminal_connected", unit: "",
            help: "1 while a paired terminal has a link open, else 0.")
        lastSeen = PerTerminalGauge(
            registry: registry, factory: factory, name: "terminal_last_seen", unit: "seconds",
            help: "When a paired terminal was last heard from, in seconds since 1970 (now while connected; none if it never connected).")
        cpu = registry.makeCounter(name: "process_cpu_seconds_total", help: "Total user and system CPU time spent in seconds.")
        resident = registry.makeGauge(name: "process_resident_memory_bytes", help: "Resident memory size in bytes.")
        virtual = registry.makeGauge(name: "process_virtual_memory_bytes", help: "Virtual memory size in bytes.")
        openFiles = registry.makeGauge(name: "process_open_fds", help: "Number of open file descriptors.")
        maxFiles = registry.makeGauge(name: "process_max_fds", help: "Maximum number of open file descriptors.")
        startTime = registry.makeGauge(
            name: "process_start_time_seconds", help: "Start time of the process since unix epoch in seconds.")
    }

    /// Sets every series from `g` and the process's figures now.
    func set(_ g: HealthGauges) {
        ready.set(Int64(g.ready ? 1 : 0))
        storeReady.set(Int64(g.storeReady ? 1 : 0))
        if let p = g.published { published?.set(Int64(p ? 1 : 0)) }
        if let r = g.rivals { rivals?.set(Int64(r)) }
        connected.set(g.terminals.map { ($0.terminalId, $0.name, $0.connected ? 1 : 0) })
        lastSeen.set(g.terminals.compactMap { t in t.lastSeenMillis.map { (t.terminalId, t.name, $0 / 1000) } })
        let sample = ProcessSampler.sample()
        if let s = sample.stats {
            if s.cpuSeconds > cpuCounted { cpu.increment(by: s.cpuSeconds - cpuCounted) }
            cpuCounted = max(cpuCounted, s.cpuSeconds)
            resident.set(s.residentBytes)
            virtual.set(s.virtualBytes)
            startTime.set(s.startTimeSeconds)
        }
        if let n = sample.openFiles { openFiles.set(Int64(n)) }
        if let n = sample.maxFiles { maxFiles.set(Int64(n)) }
    }
}
