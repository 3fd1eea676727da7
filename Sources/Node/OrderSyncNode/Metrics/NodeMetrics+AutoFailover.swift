import Prometheus

/// Failover's metrics (Docs/OPERATIONS.md, "Metrics"): the voters, on every master; automatic
/// failover's, registered by the master that runs with `--auto-failover` (the registry hands
/// back the same series on every call).
extension NodeMetrics {
    /// `ordersync_voters`: the store's voters as the master's status counts them (itself and
    /// every paired terminal that votes); a promotion needs a majority of them.
    var voters: Prometheus.Gauge {
        registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "ordersync", metricName: "voters",
                helpText: "The store's voters (the master and every paired terminal that votes); a promotion needs a majority."))
    }

    /// `ordersync_automatic_promotions_total`: promotions this node won on its own, without
    /// `ordersync promote` (0 or 1 per process: the node is master afterwards).
    var automaticPromotions: Prometheus.Counter {
        registry.makeCounter(
            descriptor: MetricNameDescriptor(
                namespace: "ordersync", metricName: "automatic_promotions", unitName: "total",
                helpText: "Promotions this node won by automatic failover (--auto-failover)."))
    }

    /// `ordersync_lease_held`: 1 while the master hears a majority of the voters and
    /// acknowledges writes, 0 while it refuses them `no_quorum`.
    var leaseHeld: Prometheus.Gauge {
        registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "ordersync", metricName: "lease", unitName: "held",
                helpText: "1 while the master hears a majority of the voters (--auto-failover), else 0."))
    }

    /// `ordersync_lease_refused_total`: terminals' operations refused `rate_limited` because what
    /// the master holds while its lease is lapsed was at its bound (`LeaseHeldMessages`).
    var leaseRefused: Prometheus.Counter {
        registry.makeCounter(
            descriptor: MetricNameDescriptor(
                namespace: "ordersync", metricName: "lease_refused", unitName: "total",
                helpText: "Terminals' operations refused while the lease was lapsed and the held ones at their bound (--auto-failover)."))
    }
}
