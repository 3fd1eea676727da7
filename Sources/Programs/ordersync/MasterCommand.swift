import ArgumentParser
import Foundation
import Logging
import NodePolicy
import OrderSyncNode
import SecureLink
import SyncCore

/// `ordersync master`.
struct MasterCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "master",
        abstract: "Run the store's master: publish it on the LAN, accept terminals, apply and broadcast orders.")

    @OptionGroup var node: NodeOptions

    @OptionGroup var served: ServedPortsOptions

    @Option(name: .long, help: ArgumentHelp("Most terminal connections at once. (default: \(NodeDefaults.maxConnections))", valueName: "n"))
    var maxConnections: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Most connections from one IP address still in the WebSocket handshake. (default: \(NodeDefaults.maxHandshakesPerAddress))",
            valueName: "n"))
    var maxHandshakesPerAddress: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Most connections from one IP address open at once. (default: \(NodeDefaults.maxConnectionsPerAddress))", valueName: "n"))
    var maxConnectionsPerAddress: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Secure handshakes one IP address may start per second, sustained. (default: \(NodeDefaults.handshakeRatePerAddress))",
            valueName: "n"))
    var handshakeRate: Double?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Secure handshakes one IP address may start at once. (default: \(NodeDefaults.handshakeBurstPerAddress))", valueName: "n"))
    var handshakeBurst: Double?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Secure handshakes all addresses together may start per second. (default: \(NodeDefaults.handshakeRateTotal))",
            valueName: "n"))
    var handshakeRateTotal: Double?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Secure handshakes all addresses together may start at once. (default: \(NodeDefaults.handshakeBurstTotal))",
            valueName: "n"))
    var handshakeBurstTotal: Double?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Operations per second one terminal may send, sustained. (default: \(NodeDefaults.rateLimitPerSecond))", valueName: "n"))
    var rateLimit: Double?

    @Option(
        name: .long,
        help: ArgumentHelp("Operations one terminal may send in a burst. (default: \(NodeDefaults.rateLimitBurst))", valueName: "n"))
    var rateBurst: Double?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Bytes of operations per second one terminal may send, sustained. (default: \(NodeDefaults.rateLimitBytesPerSecond))",
            valueName: "bytes"))
    var rateLimitBytes: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Bytes of operations one terminal may send at once (at least --max-message-size). (default: \(NodeDefaults.rateBurstBytes))",
            valueName: "bytes"))
    var rateBurstBytes: Int?

    @Option(
        name: .long, help: ArgumentHelp("Snapshots one slave may get in a row. (default: \(NodeDefaults.snapshotBurst))", valueName: "n"))
    var snapshotBurst: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Then one snapshot per this many seconds, per slave. (default: \(Self.defaultSnapshotInterval))", valueName: "seconds"))
    var snapshotInterval: Double?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Bytes one terminal's operations may add to the journal per hour. (default: \(NodeDefaults.journalBudgetBytesPerHour))",
            valueName: "bytes"))
    var journalBudget: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Standbys (paired slaves) that must hold a write through this master's local API before it is answered; 0: off. (default: \(NodeDefaults.syncReplicas))",
            valueName: "n"))
    var syncReplicas: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "How long such a write waits for them; then it is answered with \"replicated\": false. (default: \(NodeDefaults.syncTimeout.seconds))",
            valueName: "seconds"))
    var syncTimeout: Double?

    @Flag(
        name: .customLong("insecure-storepos"),
        help: "Admit StorePOS terminals (plain WebSocket, no subprotocol): neither authenticated nor encrypted.")
    var insecureStorePOS = false

    @Option(
        name: .customLong("storepos-allow"),
        help: ArgumentHelp(
            "With --insecure-storepos, admit StorePOS terminals only from this IPv4 or IPv6 range (repeatable).", valueName: "cidr"))
    var storePOSAllow: [String] = []

    @Option(
        name: .customLong("storepos-keepalive"),
        help: ArgumentHelp(
            "StorePOS links are kept while TCP holds them: TCP keepalive probes after this long idle; a dead host is dropped after about twice this. (default: \(NodeDefaults.storePOSKeepAlive.seconds))",
            valueName: "seconds"))
    var storePOSKeepAlive: Double?

    /// `--snapshot-interval`'s default, in seconds.
    static let defaultSnapshotInterval = Double(NodeDefaults.snapshotInterval.components.seconds)

    /// The master's settings: the flags given, over the settings file's `[master]` section,
    /// over the top of the file.
    func settings() -> NodeSettings {
        var s = node.flags()
        served.flags(into: &s)
        s.maxConnections = maxConnections.given
        s.maxHandshakesPerAddress = maxHandshakesPerAddress.given
        s.maxConnectionsPerAddress = maxConnectionsPerAddress.given
        s.handshakeRate = handshakeRate.given
        s.handshakeBurst = handshakeBurst.given
        s.handshakeRateTotal = handshakeRateTotal.given
        s.handshakeBurstTotal = handshakeBurstTotal.given
        s.rateLimit = rateLimit.given
        s.rateBurst = rateBurst.given
        s.rateLimitBytes = rateLimitBytes.given
        s.rateBurstBytes = rateBurstBytes.given
        s.snapshotBurst = snapshotBurst.given
        s.snapshotInterval = snapshotInterval.given
        s.journalBudget = journalBudget.given
        s.syncReplicas = syncReplicas.given
        s.syncTimeout = syncTimeout.given
        // A flag that is not given cannot say false: the file decides then.
        s.insecureStorePOS = insecureStorePOS ? Setting(true, .commandLine) : nil
        s.storePOSAllow = storePOSAllow.map { Setting($0, .commandLine) }
        s.storePOSKeepAlive = storePOSKeepAlive.given
        return s.over(SettingsFile.settings(for: .master))
    }

    func validate() throws {
        _ = try nodeConfiguration(dataDirectory: "")
    }

    /// The master's configuration from its settings (flags, file, defaults), checked: the
    /// cross-option checks of `validate()` and the values `run()` starts with.
    func nodeConfiguration(dataDirectory: String) throws -> NodeConfiguration {
        let s = settings()
        var config = try NodeOptions.configuration(role: .master, dataDirectory: dataDirectory, s)
        let maxMessage = s.maxMessageSize.or(NodeDefaults.maxMessageBytes)
        let maxConnections = s.maxConnections.or(NodeDefaults.maxConnections)
        guard (1...100_000).contains(maxConnections.value) else {
            throw problem("--max-connections must be 1-100000.", maxConnections.origin)
        }
        let perAddress = [
            s.maxHandshakesPerAddress.or(NodeDefaults.maxHandshakesPerAddress),
            s.maxConnectionsPerAddress.or(NodeDefaults.maxConnectionsPerAddress),
        ]
        guard perAddress.allSatisfy({ (1...100_000).contains($0.value) }) else {
            throw problem(
                "--max-handshakes-per-address and --max-connections-per-address must be 1-100000.", perAddress[0].origin,
                perAddress[1].origin)
        }
        let rateLimit = s.rateLimit.or(NodeDefaults.rateLimitPerSecond)
        let rateBurst = s.rateBurst.or(NodeDefaults.rateLimitBurst)
        guard (1...1_000_000).contains(rateLimit.value), (1...1_000_000).contains(rateBurst.value) else {
            throw problem("--rate-limit and --rate-burst must be 1-1000000.", rateLimit.origin, rateBurst.origin)
        }
        let handshakes = [
            ("--handshake-rate", s.handshakeRate.or(NodeDefaults.handshakeRatePerAddress)),
            ("--handshake-burst", s.handshakeBurst.or(NodeDefaults.handshakeBurstPerAddress)),
            ("--handshake-rate-total", s.handshakeRateTotal.or(NodeDefaults.handshakeRateTotal)),
            ("--handshake-burst-total", s.handshakeBurstTotal.or(NodeDefaults.handshakeBurstTotal)),
        ]
        for (name, value) in handshakes where !(1...100_000).contains(value.value) {
            throw problem("\(name) must be 1-100000.", value.origin)
        }
        let rateLimitBytes = s.rateLimitBytes.or(NodeDefaults.rateLimitBytesPerSecond)
        let rateBurstBytes = s.rateBurstBytes.or(NodeDefaults.rateBurstBytes)
        guard (1024...(1 << 40)).contains(rateLimitBytes.value), (maxMessage.value...(1 << 40)).contains(rateBurstBytes.value) else {
            throw problem(
                "--rate-limit-bytes must be at least 1024 and --rate-burst-bytes at least --max-message-size (\(maxMessage.value)).",
                rateLimitBytes.origin, rateBurstBytes.origin, maxMessage.origin)
        }
        let snapshotBurst = s.snapshotBurst.or(NodeDefaults.snapshotBurst)
        let snapshotInterval = s.snapshotInterval.or(Self.defaultSnapshotInterval)
        guard (1...1000).contains(snapshotBurst.value), (0.001...86_400).contains(snapshotInterval.value) else {
            throw problem(
                "--snapshot-burst must be 1-1000 and --snapshot-interval 0.001-86400 seconds.", snapshotBurst.origin,
                snapshotInterval.origin)
        }
        let journalBudget = s.journalBudget.or(NodeDefaults.journalBudgetBytesPerHour)
        guard (maxMessage.value...(1 << 50)).contains(journalBudget.value) else {
            throw problem(
                "--journal-budget must be at least --max-message-size (\(maxMessage.value)) bytes.", journalBudget.origin, maxMessage.origin
            )
        }
        let syncReplicas = s.syncReplicas.or(NodeDefaults.syncReplicas)
        let syncTimeout = s.syncTimeout.or(NodeDefaults.syncTimeout.seconds)
        guard (0...100).contains(syncReplicas.value), (0.01...60).contains(syncTimeout.value) else {
            throw problem("--sync-replicas must be 0-100 and --sync-timeout 0.01-60 seconds.", syncReplicas.origin, syncTimeout.origin)
        }
        let ranges = try s.storePOSAllow.map { range in
            guard let parsed = AddressRange(parsing: range.value) else {
                throw problem(
                    "--storepos-allow must be an IPv4 or IPv6 range like 192.168.1.0/24 or fd00::/8 (got '\(range.value)').", range.origin)
            }
            return parsed
        }
        let insecureStorePOS = s.insecureStorePOS.or(false)
        if let first = s.storePOSAllow.first, !insecureStorePOS.value {
            throw problem("--storepos-allow only applies with --insecure-storepos.", first.origin, insecureStorePOS.origin)
        }
        let keepAlive = s.storePOSKeepAlive.or(NodeDefaults.storePOSKeepAlive.seconds)
        guard keepAlive.value >= 1, keepAlive.value <= 3600 else {
            throw problem("--storepos-keepalive must be between 1 and 3600 seconds.", keepAlive.origin)
        }
        config.maxConnections = maxConnections.value
        config.maxHandshakesPerAddress = perAddress[0].value
        config.maxConnectionsPerAddress = perAddress[1].value
        config.handshakeRatePerAddress = RateLimit(operationsPerSecond: handshakes[0].1.value, burst: handshakes[1].1.value)
        config.handshakeRateTotal = RateLimit(operationsPerSecond: handshakes[2].1.value, burst: handshakes[3].1.value)
        config.rateLimitPerSecond = rateLimit.value
        config.rateLimitBurst = rateBurst.value
        config.rateLimitBytesPerSecond = rateLimitBytes.value
        config.rateBurstBytes = rateBurstBytes.value
        config.snapshotBurst = snapshotBurst.value
        config.snapshotInterval = .milliseconds(Int64((snapshotInterval.value * 1000).rounded()))
        config.journalBudgetBytesPerHour = journalBudget.value
        config.syncReplicas = syncReplicas.value
        config.syncTimeout = .milliseconds(Int64((syncTimeout.value * 1000).rounded()))
        config.insecureStorePOS = insecureStorePOS.value
        config.storePOSAllow = ranges
        config.storePOSKeepAlive = .seconds(keepAlive.value)
        return config
    }

    func run() throws {
        try runDaemon(.master, data: node.data, settings: settings()) { try nodeConfiguration(dataDirectory: $0) }
    }
}
