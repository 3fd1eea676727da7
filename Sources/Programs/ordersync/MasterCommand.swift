import ArgumentParser
import Foundation
import Logging
import OrderSyncNode
import SecureLink
import SyncCore

/// `ordersync master`.
struct MasterCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "master",
        abstract: "Run the store's master: publish it on the LAN, accept terminals, apply and broadcast orders.")

    @OptionGroup var node: NodeOptions

    @Option(name: .long, help: ArgumentHelp("TCP port for terminals; 0 picks any free port.", valueName: "n"))
    var port: Int = Int(NodeDefaults.port)

    @Option(name: .long, help: ArgumentHelp("Address to listen on.", valueName: "address"))
    var listen: String = "0.0.0.0"

    @Option(name: .long, help: ArgumentHelp("Most terminal connections at once.", valueName: "n"))
    var maxConnections: Int = NodeDefaults.maxConnections

    @Option(name: .long, help: ArgumentHelp("Most connections from one IP address still in the WebSocket handshake.", valueName: "n"))
    var maxHandshakesPerAddress: Int = NodeDefaults.maxHandshakesPerAddress

    @Option(name: .long, help: ArgumentHelp("Most connections from one IP address open at once.", valueName: "n"))
    var maxConnectionsPerAddress: Int = NodeDefaults.maxConnectionsPerAddress

    @Option(name: .long, help: ArgumentHelp("Secure handshakes one IP address may start per second, sustained.", valueName: "n"))
    var handshakeRate: Double = NodeDefaults.handshakeRatePerAddress

    @Option(name: .long, help: ArgumentHelp("Secure handshakes one IP address may start at once.", valueName: "n"))
    var handshakeBurst: Double = NodeDefaults.handshakeBurstPerAddress

    @Option(name: .long, help: ArgumentHelp("Secure handshakes all addresses together may start per second.", valueName: "n"))
    var handshakeRateTotal: Double = NodeDefaults.handshakeRateTotal

    @Option(name: .long, help: ArgumentHelp("Secure handshakes all addresses together may start at once.", valueName: "n"))
    var handshakeBurstTotal: Double = NodeDefaults.handshakeBurstTotal

    @Option(name: .long, help: ArgumentHelp("Operations per second one terminal may send, sustained.", valueName: "n"))
    var rateLimit: Double = NodeDefaults.rateLimitPerSecond

    @Option(name: .long, help: ArgumentHelp("Operations one terminal may send in a burst.", valueName: "n"))
    var rateBurst: Double = NodeDefaults.rateLimitBurst

    @Option(name: .long, help: ArgumentHelp("Bytes of operations per second one terminal may send, sustained.", valueName: "bytes"))
    var rateLimitBytes: Int = NodeDefaults.rateLimitBytesPerSecond

    @Option(
        name: .long,
        help: ArgumentHelp("Bytes of operations one terminal may send at once (at least --max-message-size).", valueName: "bytes"))
    var rateBurstBytes: Int = NodeDefaults.rateBurstBytes

    @Option(name: .long, help: ArgumentHelp("Snapshots one slave may get in a row.", valueName: "n"))
    var snapshotBurst: Int = NodeDefaults.snapshotBurst

    @Option(name: .long, help: ArgumentHelp("Then one snapshot per this many seconds, per slave.", valueName: "seconds"))
    var snapshotInterval: Double = Double(NodeDefaults.snapshotInterval.components.seconds)

    @Option(name: .long, help: ArgumentHelp("Bytes one terminal's operations may add to the journal per hour.", valueName: "bytes"))
    var journalBudget: Int = NodeDefaults.journalBudgetBytesPerHour

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
            "StorePOS links are kept while TCP holds them: TCP keepalive probes after this long idle; a dead host is dropped after about twice this.",
            valueName: "seconds"))
    var storePOSKeepAlive: Double = NodeDefaults.storePOSKeepAlive.seconds

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Serve the store dashboard (a read-only web page, login with `ordersync dashboard`) on this TCP address; off by default.",
            valueName: "addr:port"))
    var httpListen: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Serve the dashboard over TLS (a self-signed certificate kept in the data directory): auto (when --http-listen is beyond loopback), on or off.",
            valueName: "auto|on|off"))
    var httpTLS = DashboardTLSMode.auto

    func validate() throws {
        if let h = httpListen, MetricsAddress(parsing: h) == nil {
            throw ValidationError("--http-listen must look like 0.0.0.0:8080 or [::1]:8080 (got '\(h)').")
        }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0-65535.") }
        guard (1...100_000).contains(maxConnections) else { throw ValidationError("--max-connections must be 1-100000.") }
        guard (1...100_000).contains(maxHandshakesPerAddress), (1...100_000).contains(maxConnectionsPerAddress) else {
            throw ValidationError("--max-handshakes-per-address and --max-connections-per-address must be 1-100000.")
        }
        guard (1...1_000_000).contains(rateLimit), (1...1_000_000).contains(rateBurst) else {
            throw ValidationError("--rate-limit and --rate-burst must be 1-1000000.")
        }
        for (name, value) in [
            ("--handshake-rate", handshakeRate), ("--handshake-burst", handshakeBurst),
            ("--handshake-rate-total", handshakeRateTotal), ("--handshake-burst-total", handshakeBurstTotal),
        ] where !(1...100_000).contains(value) {
            throw ValidationError("\(name) must be 1-100000.")
        }
        guard (1024...(1 << 40)).contains(rateLimitBytes), (node.maxMessageSize...(1 << 40)).contains(rateBurstBytes) else {
            throw ValidationError(
                "--rate-limit-bytes must be at least 1024 and --rate-burst-bytes at least --max-message-size (\(node.maxMessageSize)).")
        }
        guard (1...1000).contains(snapshotBurst), (0.001...86_400).contains(snapshotInterval) else {
            throw ValidationError("--snapshot-burst must be 1-1000 and --snapshot-interval 0.001-86400 seconds.")
        }
        guard (node.maxMessageSize...(1 << 50)).contains(journalBudget) else {
            throw ValidationError("--journal-budget must be at least --max-message-size (\(node.maxMessageSize)) bytes.")
        }
        for range in storePOSAllow where AddressRange(parsing: range) == nil {
            throw ValidationError("--storepos-allow must be an IPv4 or IPv6 range like 192.168.1.0/24 or fd00::/8 (got '\(range)').")
        }
        if !storePOSAllow.isEmpty && !insecureStorePOS {
            throw ValidationError("--storepos-allow only applies with --insecure-storepos.")
        }
        guard storePOSKeepAlive >= 1, storePOSKeepAlive <= 3600 else {
            throw ValidationError("--storepos-keepalive must be between 1 and 3600 seconds.")
        }
    }

    func run() throws {
        let dir = try node.data.resolved()
        let errors = NodeErrorLog()
        let logger = node.logging.bootstrap(label: "ordersync.master", errors: errors)
        var config = NodeConfiguration(
            role: .master, dataDirectory: dir, store: node.store, name: node.name,
            serviceType: node.serviceType, port: UInt16(port), listenAddress: listen,
            masterURL: nil)
        node.apply(to: &config)
        config.httpListen = httpListen.flatMap { MetricsAddress(parsing: $0) }
        config.httpTLS = httpTLS
        config.errorLog = errors
        config.maxConnections = maxConnections
        config.maxHandshakesPerAddress = maxHandshakesPerAddress
        config.maxConnectionsPerAddress = maxConnectionsPerAddress
        config.handshakeRatePerAddress = RateLimit(operationsPerSecond: handshakeRate, burst: handshakeBurst)
        config.handshakeRateTotal = RateLimit(operationsPerSecond: handshakeRateTotal, burst: handshakeBurstTotal)
        config.rateLimitPerSecond = rateLimit
        config.rateLimitBurst = rateBurst
        config.rateLimitBytesPerSecond = rateLimitBytes
        config.rateBurstBytes = rateBurstBytes
        config.snapshotBurst = snapshotBurst
        config.snapshotInterval = .milliseconds(Int64((snapshotInterval * 1000).rounded()))
        config.journalBudgetBytesPerHour = journalBudget
        config.insecureStorePOS = insecureStorePOS
        config.storePOSAllow = storePOSAllow.compactMap { AddressRange(parsing: $0) }
        config.storePOSKeepAlive = .seconds(storePOSKeepAlive)
        try runNode { try Node(configuration: config, logger: logger).run() }
    }
}
