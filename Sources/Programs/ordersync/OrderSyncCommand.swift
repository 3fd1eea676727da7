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
            DashboardCommand.self, StorePOSCommand.self,
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
