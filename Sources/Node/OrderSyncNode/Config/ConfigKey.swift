import Logging

/// A key of the settings file: a long flag of `ordersync master` or `ordersync slave` without
/// its dashes, the kind of value it takes and the daemons that have it. The CLI's test compares
/// the cases with the daemons' `--help`.
public enum ConfigKey: String, CaseIterable, Sendable {
    case dataDir = "data-dir"
    case store
    case name
    case serviceType = "service-type"
    case logLevel = "log-level"
    case logFormat = "log-format"
    case metricsListen = "metrics-listen"
    case pingInterval = "ping-interval"
    case peerTimeout = "peer-timeout"
    case handshakeTimeout = "handshake-timeout"
    case frameTimeout = "frame-timeout"
    case maxMessageSize = "max-message-size"
    case port
    case listen
    case maxConnections = "max-connections"
    case maxHandshakesPerAddress = "max-handshakes-per-address"
    case maxConnectionsPerAddress = "max-connections-per-address"
    case handshakeRate = "handshake-rate"
    case handshakeBurst = "handshake-burst"
    case handshakeRateTotal = "handshake-rate-total"
    case handshakeBurstTotal = "handshake-burst-total"
    case rateLimit = "rate-limit"
    case rateBurst = "rate-burst"
    case rateLimitBytes = "rate-limit-bytes"
    case rateBurstBytes = "rate-burst-bytes"
    case snapshotBurst = "snapshot-burst"
    case snapshotInterval = "snapshot-interval"
    case journalBudget = "journal-budget"
    case syncReplicas = "sync-replicas"
    case syncTimeout = "sync-timeout"
    case insecureStorePOS = "insecure-storepos"
    case storePOSAllow = "storepos-allow"
    case storePOSKeepAlive = "storepos-keepalive"
    case httpListen = "http-listen"
    case httpTLS = "http-tls"
    case master
    case pair
    case pairFile = "pair-file"
    case autoFailover = "auto-failover"

    /// A daemon, and the section of the file that is its own (`[master]`, `[slave]`).
    public enum Role: String, CaseIterable, Sendable {
        /// `ordersync master`.
        case master
        /// `ordersync slave`.
        case slave
    }

    /// The kind of value a key takes.
    public enum Kind: Equatable, Sendable {
        /// Any text but the empty one.
        case text
        /// A whole number.
        case integer
        /// A finite number.
        case number
        /// true/false (yes/no, on/off, 1/0): a flag that takes no value on the command line.
        case boolean
        /// Text, repeatable: each line adds a value.
        case list
        /// One of these words.
        case choice([String])
    }

    /// The long flag this key stands for (`--port`).
    public var flag: String { "--" + rawValue }

    /// The daemons that have the flag. `data-dir` is also read by every other command (from the
    /// top of the file).
    public var roles: Set<Role> {
        switch self {
        case .dataDir, .store, .name, .serviceType, .logLevel, .logFormat, .metricsListen, .pingInterval, .peerTimeout,
            .handshakeTimeout, .frameTimeout, .maxMessageSize, .autoFailover, .port, .listen, .httpListen, .httpTLS:
            return [.master, .slave]
        case .master, .pair, .pairFile:
            return [.slave]
        default:
            return [.master]
        }
    }

    /// The kind of value the key takes.
    public var kind: Kind {
        switch self {
        case .logLevel: return .choice(Logger.Level.allCases.map(\.rawValue))
        case .logFormat: return .choice(EventLogFormat.Syntax.allCases.map(\.rawValue))
        case .httpTLS: return .choice(DashboardTLSMode.allCases.map(\.rawValue))
        case .insecureStorePOS, .autoFailover: return .boolean
        case .storePOSAllow: return .list
        case .port, .maxMessageSize, .maxConnections, .maxHandshakesPerAddress, .maxConnectionsPerAddress, .rateLimitBytes,
            .rateBurstBytes, .snapshotBurst, .journalBudget, .syncReplicas:
            return .integer
        case .pingInterval, .peerTimeout, .handshakeTimeout, .frameTimeout, .handshakeRate, .handshakeBurst, .handshakeRateTotal,
            .handshakeBurstTotal, .rateLimit, .rateBurst, .snapshotInterval, .storePOSKeepAlive, .syncTimeout:
            return .number
        default: return .text
        }
    }

    /// The value of a boolean key: nil when `text` is not one.
    public static func boolean(_ text: String) -> Bool? {
        switch text.lowercased() {
        case "true", "yes", "on", "1": return true
        case "false", "no", "off", "0": return false
        default: return nil
        }
    }
}
