import Logging

/// Where a setting's value came from.
public enum SettingOrigin: Equatable, Sendable {
    /// A flag on the command line.
    case commandLine
    /// A line of the settings file.
    case file(key: ConfigKey, path: String, line: Int)
    /// The built-in default.
    case defaultValue

    /// For a value the settings file gave: ` (port is set at FILE:LINE)`, to follow a message
    /// about it; empty otherwise.
    public var note: String {
        guard case .file(let key, let path, let line) = self else { return "" }
        return " (\(key.rawValue) is set at \(path):\(line))"
    }
}

/// One value of a setting, and where it came from.
public struct Setting<Value: Equatable & Sendable>: Equatable, Sendable {
    /// The value.
    public var value: Value
    /// The command line, the file or the default.
    public var origin: SettingOrigin

    /// `value` from `origin`.
    public init(_ value: Value, _ origin: SettingOrigin) {
        self.value = value
        self.origin = origin
    }
}

extension Optional {
    /// The setting, else `value` as the default.
    public func or<Value>(_ value: Value) -> Setting<Value> where Wrapped == Setting<Value> {
        self ?? Setting(value, .defaultValue)
    }
}

/// The settings of a daemon that the settings file or the command line gave, typed: one field
/// per key of ``ConfigKey``, nil (or empty, for a list) where nothing was given. The file gives
/// one of these per section (``ConfigFile``); the command line gives one, and wins field by
/// field (``over(_:)``); the CLI supplies the defaults and checks the ranges.
public struct NodeSettings: Equatable, Sendable {
    /// `data-dir`.
    public var dataDirectory: Setting<String>?
    /// `store`.
    public var store: Setting<String>?
    /// `name`.
    public var name: Setting<String>?
    /// `service-type`.
    public var serviceType: Setting<String>?
    /// `log-level`.
    public var logLevel: Setting<Logger.Level>?
    /// `log-format`.
    public var logFormat: Setting<EventLogFormat.Syntax>?
    /// `metrics-listen` (checked by the CLI: `addr:port`).
    public var metricsListen: Setting<String>?
    /// `ping-interval`, in seconds.
    public var pingInterval: Setting<Double>?
    /// `peer-timeout`, in seconds.
    public var peerTimeout: Setting<Double>?
    /// `handshake-timeout`, in seconds.
    public var handshakeTimeout: Setting<Double>?
    /// `frame-timeout`, in seconds.
    public var frameTimeout: Setting<Double>?
    /// `max-message-size`, in bytes.
    public var maxMessageSize: Setting<Int>?
    /// `port` (checked by the CLI: 0-65535).
    public var port: Setting<Int>?
    /// `listen`.
    public var listen: Setting<String>?
    /// `max-connections`.
    public var maxConnections: Setting<Int>?
    /// `max-handshakes-per-address`.
    public var maxHandshakesPerAddress: Setting<Int>?
    /// `max-connections-per-address`.
    public var maxConnectionsPerAddress: Setting<Int>?
    /// `handshake-rate`, per second.
    public var handshakeRate: Setting<Double>?
    /// `handshake-burst`.
    public var handshakeBurst: Setting<Double>?
    /// `handshake-rate-total`, per second.
    public var handshakeRateTotal: Setting<Double>?
    /// `handshake-burst-total`.
    public var handshakeBurstTotal: Setting<Double>?
    /// `rate-limit`, operations per second.
    public var rateLimit: Setting<Double>?
    /// `rate-burst`, operations.
    public var rateBurst: Setting<Double>?
    /// `rate-limit-bytes`, per second.
    public var rateLimitBytes: Setting<Int>?
    /// `rate-burst-bytes`.
    public var rateBurstBytes: Setting<Int>?
    /// `snapshot-burst`.
    public var snapshotBurst: Setting<Int>?
    /// `snapshot-interval`, in seconds.
    public var snapshotInterval: Setting<Double>?
    /// `journal-budget`, bytes per hour.
    public var journalBudget: Setting<Int>?
    /// `sync-replicas`, standbys a local API write waits for.
    public var syncReplicas: Setting<Int>?
    /// `sync-timeout`, in seconds.
    public var syncTimeout: Setting<Double>?
    /// `insecure-storepos`.
    public var insecureStorePOS: Setting<Bool>?
    /// `storepos-allow`, one setting per range (checked by the CLI).
    public var storePOSAllow: [Setting<String>] = []
    /// `storepos-keepalive`, in seconds.
    public var storePOSKeepAlive: Setting<Double>?
    /// `http-listen` (checked by the CLI: `addr:port`).
    public var httpListen: Setting<String>?
    /// `http-tls`.
    public var httpTLS: Setting<DashboardTLSMode>?
    /// `master` (checked by the CLI: `ws://HOST:PORT/`).
    public var master: Setting<String>?
    /// `pair`.
    public var pair: Setting<String>?
    /// `pair-file`.
    public var pairFile: Setting<String>?

    /// No settings.
    public init() {}

    /// These settings, with `other`'s where these have none: the command line over the file,
    /// a daemon's section over the top of the file. A list is taken whole from one side.
    public func over(_ other: NodeSettings) -> NodeSettings {
        var s = self
        s.dataDirectory = dataDirectory ?? other.dataDirectory
        s.store = store ?? other.store
        s.name = name ?? other.name
        s.serviceType = serviceType ?? other.serviceType
        s.logLevel = logLevel ?? other.logLevel
        s.logFormat = logFormat ?? other.logFormat
        s.metricsListen = metricsListen ?? other.metricsListen
        s.pingInterval = pingInterval ?? other.pingInterval
        s.peerTimeout = peerTimeout ?? other.peerTimeout
        s.handshakeTimeout = handshakeTimeout ?? other.handshakeTimeout
        s.frameTimeout = frameTimeout ?? other.frameTimeout
        s.maxMessageSize = maxMessageSize ?? other.maxMessageSize
        s.port = port ?? other.port
        s.listen = listen ?? other.listen
        s.maxConnections = maxConnections ?? other.maxConnections
        s.maxHandshakesPerAddress = maxHandshakesPerAddress ?? other.maxHandshakesPerAddress
        s.maxConnectionsPerAddress = maxConnectionsPerAddress ?? other.maxConnectionsPerAddress
        s.handshakeRate = handshakeRate ?? other.handshakeRate
        s.handshakeBurst = handshakeBurst ?? other.handshakeBurst
        s.handshakeRateTotal = handshakeRateTotal ?? other.handshakeRateTotal
        s.handshakeBurstTotal = handshakeBurstTotal ?? other.handshakeBurstTotal
        s.rateLimit = rateLimit ?? other.rateLimit
        s.rateBurst = rateBurst ?? other.rateBurst
        s.rateLimitBytes = rateLimitBytes ?? other.rateLimitBytes
        s.rateBurstBytes = rateBurstBytes ?? other.rateBurstBytes
        s.snapshotBurst = snapshotBurst ?? other.snapshotBurst
        s.snapshotInterval = snapshotInterval ?? other.snapshotInterval
        s.journalBudget = journalBudget ?? other.journalBudget
        s.syncReplicas = syncReplicas ?? other.syncReplicas
        s.syncTimeout = syncTimeout ?? other.syncTimeout
        s.insecureStorePOS = insecureStorePOS ?? other.insecureStorePOS
        s.storePOSAllow = storePOSAllow.isEmpty ? other.storePOSAllow : storePOSAllow
        s.storePOSKeepAlive = storePOSKeepAlive ?? other.storePOSKeepAlive
        s.httpListen = httpListen ?? other.httpListen
        s.httpTLS = httpTLS ?? other.httpTLS
        s.master = master ?? other.master
        s.pair = pair ?? other.pair
        s.pairFile = pairFile ?? other.pairFile
        return s
    }

    /// Sets `key` from its text in the file (unquoted), at `line` of `path`; a value that is
    /// not of the key's kind is an error. A list key adds a value; any other key replaces it.
    public mutating func set(_ key: ConfigKey, _ text: String, path: String, line: Int) throws(ConfigError.Problem) {
        let origin = SettingOrigin.file(key: key, path: path, line: line)
        func value<T>(_ parse: (String) -> T?) throws(ConfigError.Problem) -> Setting<T> {
            guard !text.isEmpty || !(key.kind == .text || key.kind == .list) else { throw .emptyValue(key) }
            guard let v = parse(text) else { throw .badValue(key, value: text, expected: key.kind) }
            return Setting(v, origin)
        }
        let asText: (String) -> String? = { $0 }
        let integer: (String) -> Int? = { Int($0) }
        let number: (String) -> Double? = { Double($0).flatMap { $0.isFinite ? $0 : nil } }
        switch key {
        case .dataDir: dataDirectory = try value(asText)
        case .store: store = try value(asText)
        case .name: name = try value(asText)
        case .serviceType: serviceType = try value(asText)
        case .logLevel: logLevel = try value { Logger.Level(rawValue: $0) }
        case .logFormat: logFormat = try value { EventLogFormat.Syntax(rawValue: $0) }
        case .metricsListen: metricsListen = try value(asText)
        case .pingInterval: pingInterval = try value(number)
        case .peerTimeout: peerTimeout = try value(number)
        case .handshakeTimeout: handshakeTimeout = try value(number)
        case .frameTimeout: frameTimeout = try value(number)
        case .maxMessageSize: maxMessageSize = try value(integer)
        case .port: port = try value(integer)
        case .listen: listen = try value(asText)
        case .maxConnections: maxConnections = try value(integer)
        case .maxHandshakesPerAddress: maxHandshakesPerAddress = try value(integer)
        case .maxConnectionsPerAddress: maxConnectionsPerAddress = try value(integer)
        case .handshakeRate: handshakeRate = try value(number)
        case .handshakeBurst: handshakeBurst = try value(number)
        case .handshakeRateTotal: handshakeRateTotal = try value(number)
        case .handshakeBurstTotal: handshakeBurstTotal = try value(number)
        case .rateLimit: rateLimit = try value(number)
        case .rateBurst: rateBurst = try value(number)
        case .rateLimitBytes: rateLimitBytes = try value(integer)
        case .rateBurstBytes: rateBurstBytes = try value(integer)
        case .snapshotBurst: snapshotBurst = try value(integer)
        case .snapshotInterval: snapshotInterval = try value(number)
        case .journalBudget: journalBudget = try value(integer)
        case .syncReplicas: syncReplicas = try value(integer)
        case .syncTimeout: syncTimeout = try value(number)
        case .insecureStorePOS: insecureStorePOS = try value(ConfigKey.boolean)
        case .storePOSAllow: storePOSAllow.append(try value(asText))
        case .storePOSKeepAlive: storePOSKeepAlive = try value(number)
        case .httpListen: httpListen = try value(asText)
        case .httpTLS: httpTLS = try value { DashboardTLSMode(rawValue: $0) }
        case .master: master = try value(asText)
        case .pair: pair = try value(asText)
        case .pairFile: pairFile = try value(asText)
        }
    }
}
