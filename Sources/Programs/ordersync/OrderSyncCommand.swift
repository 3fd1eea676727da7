import ArgumentParser
import Foundation
import Logging
import NodePolicy
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
            PromoteCommand.self, RollupCommand.self,
        ]
    )

    /// Runs the command with the settings file's values under its flags (flags win, field by
    /// field; see ConfigMain.swift); a `check` whose arguments do not parse exits UNKNOWN (3),
    /// not 64; a daemon's that do not parse is a `start.bad_settings` event (exit 64). An
    /// unknown command is named (with the nearest one) before the settings file is read.
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if let unknown = UnknownCommand(arguments: arguments) {
            FileHandle.standardError.write(Data("ordersync: \(unknown.message)\n".utf8))
            Foundation.exit(ExitStatus.usage.rawValue)
        }
        SettingsFile.$current.withValue(settingsFile(for: arguments)) {
            do {
                var command = try parseAsRoot(arguments)
                try command.run()
            } catch {
                if let report = CheckCommand.unknownForBadArguments(arguments, error: error) {
                    print(report.line)
                    Foundation.exit(report.state.rawValue)
                }
                if let refusal = StartRefusal.forParseError(error, arguments: arguments),
                    let role = StartRefusal.daemonRole(arguments)
                {
                    refusal.report(format: StartRefusal.format(arguments: arguments, role: role))
                    Foundation.exit(refusal.exitStatus.rawValue)
                }
                if arguments.first == RollupCommand._commandName, exitCode(for: error) == .validationFailure {
                    // A bad command line: 64, as every other command (Docs/OPERATIONS.md).
                    FileHandle.standardError.write(Data("\(fullMessage(for: error))\n".utf8))
                    Foundation.exit(RollupExit.usage.rawValue)
                }
                exit(withError: error)
            }
        }
    }
}

/// `--data-dir`, shared by every command (also read from ORDERSYNC_DATA_DIR and the settings
/// file).
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

    /// The data directory: the option, else the environment, else the settings file's
    /// `data-dir` (for a daemon, its own section's over the top of the file).
    func resolved(for role: ConfigKey.Role? = nil) throws -> String {
        if let d = dataDir, !d.isEmpty { return d }
        if let d = ProcessInfo.processInfo.environment["ORDERSYNC_DATA_DIR"], !d.isEmpty { return d }
        if let d = SettingsFile.settings(for: role).dataDirectory?.value { return d }
        throw ValidationError("Missing --data-dir (or set ORDERSYNC_DATA_DIR).")
    }
}

/// Logging options of the daemons.
struct LoggingOptions: ParsableArguments {
    @Option(name: .long, help: "Log level. (default: info)")
    var logLevel: Logger.Level?

    @Option(name: .long, help: "Log format: text (logfmt) or json (one JSON object per line). (default: text)")
    var logFormat: EventLogFormat.Syntax?

    /// Installs the stderr log backend (and `errors`, which keeps the last warning for status)
    /// with the level and format of `settings`, and returns the root logger.
    static func bootstrap(label: String, errors: NodeErrorLog, settings: NodeSettings) -> Logger {
        let level = settings.logLevel.or(.info).value
        let format = EventLogFormat(syntax: settings.logFormat.or(.text).value, priorityPrefix: EventLogFormat.standardErrorIsJournal())
        LoggingSystem.bootstrap { label in
            MultiplexLogHandler([EventLogHandler(logLevel: level, format: format, label: label), NodeErrorLogHandler(errors: errors)])
        }
        var logger = Logger(label: label)
        logger.logLevel = level
        return logger
    }
}

/// Options shared by master and slave. Each is nil unless given, so that the settings file's
/// value (and then the default) applies where it is not.
struct NodeOptions: ParsableArguments {
    @OptionGroup var data: DataDirOption

    @Option(
        name: .long, help: "Store id. A master without it makes one once and keeps it; a slave without it joins the only store it sees.")
    var store: String?

    @Option(name: .long, help: "Terminal name (master: the DNS-SD instance name). Default: the host name.")
    var name: String?

    @Option(name: .long, help: "DNS-SD service type. (default: \(NodeDefaults.serviceType))")
    var serviceType: String?

    @OptionGroup var logging: LoggingOptions

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Ping a WebSocket link idle for this long. (default: \(NodeDefaults.pingInterval.seconds))", valueName: "seconds"))
    var pingInterval: Double?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Drop a peer silent for this long (frozen or vanished). (default: \(NodeDefaults.peerTimeout.seconds))", valueName: "seconds"))
    var peerTimeout: Double?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Time allowed for the WebSocket opening handshake. (default: \(NodeDefaults.handshakeTimeout.seconds))", valueName: "seconds"))
    var handshakeTimeout: Double?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Time allowed for a started WebSocket frame to complete. (default: \(NodeDefaults.frameTimeout.seconds))",
            valueName: "seconds"))
    var frameTimeout: Double?

    @Option(
        name: .long,
        help: ArgumentHelp("Largest accepted WebSocket message. (default: \(NodeDefaults.maxMessageBytes))", valueName: "bytes"))
    var maxMessageSize: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Also serve GET /metrics (Prometheus) over plain HTTP on this TCP address; off by default.", valueName: "addr:port"))
    var metricsListen: String?

    @Flag(
        name: .customLong("auto-failover"),
        help: "Stores of 3 or more voters: a slave takes over when the master is silent; a master without a majority stops acknowledging.")
    var autoFailover = false

    /// The options given on the command line, as settings.
    func flags() -> NodeSettings {
        var s = NodeSettings()
        s.store = store.given
        s.name = name.given
        s.serviceType = serviceType.given
        s.logLevel = logging.logLevel.given
        s.logFormat = logging.logFormat.given
        s.pingInterval = pingInterval.given
        s.peerTimeout = peerTimeout.given
        s.handshakeTimeout = handshakeTimeout.given
        s.frameTimeout = frameTimeout.given
        s.maxMessageSize = maxMessageSize.given
        s.metricsListen = metricsListen.given
        s.autoFailover = autoFailover ? Setting(true, .commandLine) : nil
        return s
    }

    /// A daemon's configuration with the settings shared by master and slave (`s`: flags over
    /// the file), the served ports among them (``ServedPortsOptions``), checked: a value out of range is a usage error naming the file and line that
    /// set it, if the file did.
    static func configuration(
        role: NodeRole, dataDirectory: String, _ s: NodeSettings, masterURL: MasterURL? = nil
    ) throws -> NodeConfiguration {
        let timeouts = [
            ("--ping-interval", s.pingInterval.or(NodeDefaults.pingInterval.seconds)),
            ("--peer-timeout", s.peerTimeout.or(NodeDefaults.peerTimeout.seconds)),
            ("--handshake-timeout", s.handshakeTimeout.or(NodeDefaults.handshakeTimeout.seconds)),
            ("--frame-timeout", s.frameTimeout.or(NodeDefaults.frameTimeout.seconds)),
        ]
        for (name, v) in timeouts where !(v.value >= 0.1 && v.value <= 3600) {
            throw problem("\(name) must be between 0.1 and 3600 seconds.", v.origin)
        }
        let metrics = try s.metricsListen.map { m in
            guard let address = MetricsAddress(parsing: m.value) else {
                throw problem("--metrics-listen must look like 127.0.0.1:9420 or [::1]:9420 (got '\(m.value)').", m.origin)
            }
            return address
        }
        let (ping, peer) = (timeouts[0].1, timeouts[1].1)
        guard peer.value > ping.value else {
            throw problem("--peer-timeout must be longer than --ping-interval.", peer.origin, ping.origin)
        }
        let maxMessage = s.maxMessageSize.or(NodeDefaults.maxMessageBytes)
        guard (1024...(64 << 20)).contains(maxMessage.value) else {
            throw problem("--max-message-size must be 1024...67108864 bytes.", maxMessage.origin)
        }
        if let store = s.store, !NodeConfiguration.isValidStoreId(store.value) {
            throw problem("--store must be 1-64 characters of letters, digits, '-', '_' or '.'.", store.origin)
        }
        let serviceType = s.serviceType.or(NodeDefaults.serviceType)
        guard NodeConfiguration.isValidServiceType(serviceType.value) else {
            throw problem("--service-type must look like _name._tcp (got '\(serviceType.value)').", serviceType.origin)
        }
        if let n = s.name, n.value.isEmpty || n.value.utf8.count > 63 {
            throw problem("--name must be 1-63 bytes (a DNS-SD instance name).", n.origin)
        }
        var c = NodeConfiguration(
            role: role, dataDirectory: dataDirectory, store: s.store?.value, name: s.name?.value, serviceType: serviceType.value,
            port: 0, listenAddress: "0.0.0.0", masterURL: masterURL)
        // The terminals' port and the dashboard: a master's, and a slave's once promoted.
        try ServedPortsOptions.apply(s, to: &c)
        c.pingInterval = .seconds(ping.value)
        c.peerTimeout = .seconds(peer.value)
        c.handshakeTimeout = .seconds(timeouts[2].1.value)
        c.frameTimeout = .seconds(timeouts[3].1.value)
        c.maxMessageBytes = maxMessage.value
        c.metricsListen = metrics
        // For tests: the log's summaries of repeated failures, every N seconds instead of 60.
        if let raw = ProcessInfo.processInfo.environment["ORDERSYNC_LOG_SUMMARY_SECONDS"], let s = Double(raw), s > 0 {
            c.logSummaryInterval = .seconds(s)
        }
        return c
    }
}

extension Optional where Wrapped: Equatable & Sendable {
    /// An option's value as a setting given on the command line; nil when it was not given.
    var given: Setting<Wrapped>? { map { Setting($0, .commandLine) } }
}

/// A usage error about settings: `message`, then where the settings file set each value it is
/// about (`--port must be 0-65535. (port is set at /etc/ordersync/ordersync.conf:12)`).
func problem(_ message: String, _ origins: SettingOrigin...) -> ValidationError {
    ValidationError(message + origins.map(\.note).joined())
}
