import ArgumentParser
import Foundation
import Logging
import OrderSyncNode
import SecureLink
import SyncCore

/// `ordersync`: the root command.
@main
struct OrderSyncCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ordersync",
        abstract: "Keep the orders of every POS terminal in a shop in sync over the LAN.",
        discussion: """
            One terminal runs `ordersync master`, the others `ordersync slave`. Slaves find the master \
            through DNS-SD (Avahi) and sync over WebSocket; every node keeps its orders in SQLite in its \
            data directory. POS apps use the local API (Unix socket in the data directory); the `order` \
            and `status` commands are clients of it.
            """,
        version: NodeVersion.full,
        subcommands: [
            MasterCommand.self, SlaveCommand.self, OrderCommand.self, StatusCommand.self, CheckCommand.self, JournalCommand.self,
            PairCommand.self, TerminalCommand.self, KeyCommand.self, BackupCommand.self, WatchCommand.self, ExportCommand.self,
            DashboardCommand.self,
        ]
    )

    /// Runs the command with the settings file's values added (flags win; see ConfigMain.swift);
    /// a `check` whose arguments do not parse exits UNKNOWN (3), not 64.
    static func main() {
        let settings = argumentsWithSettings()
        let arguments = settings.arguments
        do {
            var command = try parseAsRoot(arguments)
            try command.run()
        } catch {
            if let report = CheckCommand.unknownForBadArguments(arguments, error: error) {
                print(report.line)
                Foundation.exit(report.state.rawValue)
            }
            exitNamingTheSetting(of: error, settings)
            exit(withError: error)
        }
    }
}

/// `--data-dir`, shared by every command (also read from ORDERSYNC_DATA_DIR).
struct DataDirOption: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The node's data directory (SQLite file and local API socket). Default: $ORDERSYNC_DATA_DIR.",
            valueName: "dir"))
    var dataDir: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Settings file (keys are the long flags; flags win). Default: $ORDERSYNC_CONFIG, else /etc/ordersync/ordersync.conf if it exists.",
            valueName: "file"))
    var config: String?

    /// The data directory, from the option or the environment.
    func resolved() throws -> String {
        if let d = dataDir, !d.isEmpty { return d }
        if let d = ProcessInfo.processInfo.environment["ORDERSYNC_DATA_DIR"], !d.isEmpty { return d }
        throw ValidationError("Missing --data-dir (or set ORDERSYNC_DATA_DIR).")
    }
}

/// Logging options of the daemons.
struct LoggingOptions: ParsableArguments {
    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    @Option(name: .long, help: "Log format: text (logfmt) or json (one JSON object per line).")
    var logFormat: String = "text"

    func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError(
                "Unknown --log-level '\(logLevel)'. Use one of: \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")).")
        }
        guard EventLogFormat.Syntax(rawValue: logFormat) != nil else {
            throw ValidationError("Unknown --log-format '\(logFormat)'. Use text or json.")
        }
    }

    /// Installs the stderr log backend (and `errors`, which keeps the last warning for status)
    /// and returns the root logger.
    func bootstrap(label: String, errors: NodeErrorLog) -> Logger {
        let level = Logger.Level(rawValue: logLevel) ?? .info
        let format = EventLogFormat(
            syntax: EventLogFormat.Syntax(rawValue: logFormat) ?? .text, priorityPrefix: EventLogFormat.standardErrorIsJournal())
        LoggingSystem.bootstrap { label in
            MultiplexLogHandler([EventLogHandler(logLevel: level, format: format, label: label), NodeErrorLogHandler(errors: errors)])
        }
        var logger = Logger(label: label)
        logger.logLevel = level
        return logger
    }
}

/// Options shared by master and slave.
struct NodeOptions: ParsableArguments {
    @OptionGroup var data: DataDirOption

    @Option(
        name: .long, help: "Store id. A master without it makes one once and keeps it; a slave without it joins the only store it sees.")
    var store: String?

    @Option(name: .long, help: "Terminal name (master: the DNS-SD instance name). Default: the host name.")
    var name: String?

    @Option(name: .long, help: "DNS-SD service type.")
    var serviceType: String = NodeDefaults.serviceType

    @OptionGroup var logging: LoggingOptions

    @Option(name: .long, help: ArgumentHelp("Ping a WebSocket link idle for this long.", valueName: "seconds"))
    var pingInterval: Double = NodeDefaults.pingInterval.seconds

    @Option(name: .long, help: ArgumentHelp("Drop a peer silent for this long (frozen or vanished).", valueName: "seconds"))
    var peerTimeout: Double = NodeDefaults.peerTimeout.seconds

    @Option(name: .long, help: ArgumentHelp("Time allowed for the WebSocket opening handshake.", valueName: "seconds"))
    var handshakeTimeout: Double = NodeDefaults.handshakeTimeout.seconds

    @Option(name: .long, help: ArgumentHelp("Time allowed for a started WebSocket frame to complete.", valueName: "seconds"))
    var frameTimeout: Double = NodeDefaults.frameTimeout.seconds

    @Option(name: .long, help: ArgumentHelp("Largest accepted WebSocket message.", valueName: "bytes"))
    var maxMessageSize: Int = NodeDefaults.maxMessageBytes

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Also serve GET /metrics (Prometheus) over plain HTTP on this TCP address; off by default.", valueName: "addr:port"))
    var metricsListen: String?

    /// Applies the link options to a configuration.
    func apply(to c: inout NodeConfiguration) {
        c.pingInterval = .seconds(pingInterval)
        c.peerTimeout = .seconds(peerTimeout)
        c.handshakeTimeout = .seconds(handshakeTimeout)
        c.frameTimeout = .seconds(frameTimeout)
        c.maxMessageBytes = maxMessageSize
        c.metricsListen = metricsListen.flatMap { MetricsAddress(parsing: $0) }
        // For tests: the log's summaries of repeated failures, every N seconds instead of 60.
        if let raw = ProcessInfo.processInfo.environment["ORDERSYNC_LOG_SUMMARY_SECONDS"], let s = Double(raw), s > 0 {
            c.logSummaryInterval = .seconds(s)
        }
    }

    func validate() throws {
        for (name, v) in [
            ("--ping-interval", pingInterval), ("--peer-timeout", peerTimeout),
            ("--handshake-timeout", handshakeTimeout), ("--frame-timeout", frameTimeout),
        ] {
            guard v >= 0.1, v <= 3600 else { throw ValidationError("\(name) must be between 0.1 and 3600 seconds.") }
        }
        if let m = metricsListen, MetricsAddress(parsing: m) == nil {
            throw ValidationError("--metrics-listen must look like 127.0.0.1:9420 or [::1]:9420 (got '\(m)').")
        }
        guard peerTimeout > pingInterval else {
            throw ValidationError("--peer-timeout must be longer than --ping-interval.")
        }
        guard (1024...(64 << 20)).contains(maxMessageSize) else {
            throw ValidationError("--max-message-size must be 1024...67108864 bytes.")
        }
        if let s = store {
            guard NodeConfiguration.isValidStoreId(s) else {
                throw ValidationError("--store must be 1-64 characters of letters, digits, '-', '_' or '.'.")
            }
        }
        guard NodeConfiguration.isValidServiceType(serviceType) else {
            throw ValidationError("--service-type must look like _name._tcp (got '\(serviceType)').")
        }
        if let n = name, n.isEmpty || n.utf8.count > 63 {
            throw ValidationError("--name must be 1-63 bytes (a DNS-SD instance name).")
        }
    }
}

/// Runs a node until SIGINT/SIGTERM and maps failures to a clear message and exit status
/// (`ExitStatus`: 66 for a missing parent of the data directory, 74 for an unusable store).
func runNode(_ body: () throws -> Void) throws {
    do {
        try body()
    } catch let e as NodeStartupError {
        FileHandle.standardError.write(Data("ordersync: \(e.message)\n".utf8))
        throw ExitStatus(e.failure).exitCode
    }
}

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
        try runNode { try MasterNode(configuration: config, logger: logger).run() }
    }
}

/// `ordersync slave`.
struct SlaveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "slave",
        abstract: "Run a terminal's replica: find the master on the LAN, keep a synced copy, forward local changes.")

    @OptionGroup var node: NodeOptions

    @Option(name: .long, help: ArgumentHelp("Connect to this master (ws://HOST:PORT/) instead of discovering one.", valueName: "url"))
    var master: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Pair with the master using this code from `ordersync pair` (needed once; ignored when already paired with it). "
                + "`-` reads it from standard input, so that it never shows in `ps`.",
            valueName: "code|-"))
    var pair: String?

    @Option(
        name: .long,
        help: ArgumentHelp("Pair with the code written in this file (its first line), so that it never shows in `ps`.", valueName: "file"))
    var pairFile: String?

    /// The environment variable a pairing code may come from instead of `--pair`.
    static let pairCodeVariable = "ORDERSYNC_PAIR_CODE"

    func validate() throws {
        if let m = master {
            guard MasterURL(parsing: m) != nil else {
                throw ValidationError("--master must look like ws://HOST:PORT/ (got '\(m)').")
            }
        }
        let sources = [pair != nil, pairFile != nil, ProcessInfo.processInfo.environment[Self.pairCodeVariable] != nil]
        guard sources.filter({ $0 }).count <= 1 else {
            throw ValidationError("give the pairing code one way only: --pair, --pair-file or \(Self.pairCodeVariable).")
        }
        if let code = pair, code != "-" { _ = try Self.parseCode(code, from: "--pair") }
    }

    /// The pairing code from `--pair CODE`, `--pair -` (standard input's first line),
    /// `--pair-file FILE` (its first line) or `ORDERSYNC_PAIR_CODE`, if any. A code that is not
    /// one fails with what is wrong and where it came from.
    func pairingCode() throws -> PairingCode? {
        if let code = pair, code != "-" { return try Self.parseCode(code, from: "--pair") }
        if pair == "-" {
            guard let line = readLine(strippingNewline: true) else {
                throw ValidationError("--pair -: standard input ended before a pairing code.")
            }
            return try Self.parseCode(line, from: "standard input")
        }
        if let path = pairFile {
            let text: String
            do { text = try String(contentsOfFile: path, encoding: .utf8) } catch {
                throw ValidationError("--pair-file: cannot read \(path): \(error.localizedDescription)")
            }
            return try Self.parseCode(String(text.split(whereSeparator: \.isNewline).first ?? ""), from: path)
        }
        if let code = ProcessInfo.processInfo.environment[Self.pairCodeVariable] {
            // Not passed on to anything this process starts.
            unsetenv(Self.pairCodeVariable)
            return try Self.parseCode(code, from: Self.pairCodeVariable)
        }
        return nil
    }

    /// A typed code, or a validation error naming where it came from.
    static func parseCode(_ text: String, from source: String) throws -> PairingCode {
        do {
            return try PairingCode(parsing: text.trimmingCharacters(in: .whitespaces))
        } catch {
            throw ValidationError("\(source): \(error.message)")
        }
    }

    func run() throws {
        let dir = try node.data.resolved()
        let errors = NodeErrorLog()
        let logger = node.logging.bootstrap(label: "ordersync.slave", errors: errors)
        var config = NodeConfiguration(
            role: .slave, dataDirectory: dir, store: node.store, name: node.name,
            serviceType: node.serviceType, port: 0, listenAddress: "0.0.0.0",
            masterURL: master.flatMap { MasterURL(parsing: $0) })
        node.apply(to: &config)
        config.errorLog = errors
        config.pairingCode = try pairingCode()
        try runNode { try SlaveNode(configuration: config, logger: logger).run() }
    }
}

/// `--http-tls auto|on|off`.
extension DashboardTLSMode: ExpressibleByArgument {}
