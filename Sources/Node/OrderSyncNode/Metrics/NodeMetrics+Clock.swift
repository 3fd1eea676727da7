import Prometheus

/// Clock sense's metrics (Docs/OPERATIONS.md, "Metrics"; Docs/PROTOCOL.md 4.8): on the master
/// `ordersync_terminal_clock_offset_seconds{terminal,name}` per connected OrderSync slave whose
/// clock was measured (a terminal that leaves loses its series, so the label set stays that of
/// the paired terminals), on a slave `ordersync_clock_offset_seconds` once measured.
extension NodeMetrics {
    /// Sets each connected terminal's offset (its clock minus the master's, in milliseconds)
    /// and drops the series of terminals not listed.
    func setClockOffsets(_ list: [(id: String, name: String, offsetMillis: Int64)]) {
        let descriptor = MetricNameDescriptor(
            namespace: "ordersync", metricName: "terminal_clock_offset", unitName: "seconds",
            helpText: "A connected slave's wall clock minus the master's (warned about beyond 30 s), by terminal id and name.")
        var seen = Set<String>()
        for t in list {
            seen.insert(t.id)
            if let old = clockSeries[t.id], old.name != t.name {
                registry.unregisterGauge(old.gauge)
                clockSeries[t.id] = nil
            }
            let gauge =
                clockSeries[t.id]?.gauge ?? registry.makeGauge(descriptor: descriptor, labels: [("terminal", t.id), ("name", t.name)])
            gauge.set(Double(t.offsetMillis) / 1000)
            clockSeries[t.id] = (t.name, gauge)
        }
        for (id, old) in clockSeries where !seen.contains(id) {
            registry.unregisterGauge(old.gauge)
            clockSeries[id] = nil
        }
    }

    /// Sets this slave's own offset from its master (nothing while unmeasured).
    func setClockOffset(_ offsetMillis: Int64?) {
        guard let offsetMillis else { return }
        registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "ordersync", metricName: "clock_offset", unitName: "seconds",
                helpText: "This terminal's wall clock minus its master's, as last measured (warned about beyond 30 s).")
        ).set(Double(offsetMillis) / 1000)
    }
}
