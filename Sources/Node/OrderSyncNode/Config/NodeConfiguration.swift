import Foundation
import NodePolicy
import SecureLink
import SyncCore

/// The version printed by `ordersync --version` and sent in `status`.
public enum NodeVersion {
    /// Semantic version of this build.
    public static let string = "0.1.0"

    /// What `ordersync --version` prints: the version and the commit it was built from
    /// (`0.1.0 (commit 1a2b3c4)`, or `0.1.0 (unknown commit)` for a build that did not record it).
    public static var full: String { "\(string) (\(commit.map { "commit \($0)" } ?? "unknown commit"))" }
}

/// `ws://HOST:PORT/PATH` given with `--master`.
public struct MasterURL: Equatable, Sendable, CustomStringConvertible {
    /// Host name or address (IPv6 without brackets).
    public var host: String
    /// TCP port.
    public var port: UInt16
    /// Request path.
    public var path: String

    /// Parses `ws://HOST[:PORT][/PATH]`; nil for anything else.
    public init?(parsing text: String) {
        guard text.lowercased().hasPrefix("ws://") else { return nil }
        var rest = Substring(text.dropFirst(5))
        var path = "/"
        if let slash = rest.firstIndex(of: "/") {
            path = String(rest[slash...])
            rest = rest[..<slash]
        }
        var host: Substring
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return nil }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() } else if !after.isEmpty { return nil }
        } else if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        } else {
            host = rest
        }
        guard !host.isEmpty, !host.contains(" ") else { return nil }
        var port = NodeDefaults.port
        if let p = portText {
            guard let n = UInt16(p), n > 0 else { return nil }
            port = n
        }
        self.host = String(host)
        self.port = port
        self.path = path
    }

    /// A URL from its parts.
    public init(host: String, port: UInt16, path: String = "/") {
        self.host = host
        self.port = port
        self.path = path
    }

    public var description: String {
        let h = host.contains(":") ? "[\(host)]" : host
        return "ws://\(h):\(port)\(path)"
    }
}

/// Everything a node needs to start.
public struct NodeConfiguration: Sendable {
    /// Master or slave.
    public var role: NodeRole
    /// The data directory (created with mode 0700 if missing).
    public var dataDirectory: String
    /// Store id from `--store`, if given.
    public var store: String?
    /// Terminal name from `--name`, if given.
    public var name: String?
    /// DNS-SD service type.
    public var serviceType: String
    /// Master: TCP port (0 = any free port).
    public var port: UInt16
    /// Master: address to listen on.
    public var listenAddress: String
    /// Slave: fixed master, skipping discovery.
    public var masterURL: MasterURL?
    /// Slave: the pairing code from `--pair` (pairs on start unless the trust file was made
    /// with this code).
    public var pairingCode: PairingCode?
    /// Where the executable's log backend records the last warning-or-worse event, for
    /// `lastError` in status.
    public var errorLog = NodeErrorLog()
    /// A broadcast whose JSON is larger than this goes out in parts of at most this many bytes
    /// (`BroadcastParts`, `Docs/PROTOCOL.md` 4.1.1): no message outgrows what a terminal
    /// accepts. The master refuses an operation whose broadcast would outgrow
    /// `maxPendingSendBytes` (`too_large`), and catches a terminal up with at most half of it
    /// (beyond, a snapshot).
    public static let broadcastPartBytes = 1 << 20
    /// Largest accepted WebSocket message.
    public var maxMessageBytes = NodeDefaults.maxMessageBytes
    /// Idle time before a ping.
    public var pingInterval = NodeDefaults.pingInterval
    /// Silence after which a peer is dead.
    public var peerTimeout = NodeDefaults.peerTimeout
    /// Time allowed for the opening handshake.
    public var handshakeTimeout = NodeDefaults.handshakeTimeout
    /// Time allowed for a started frame to complete.
    public var frameTimeout = NodeDefaults.frameTimeout
    /// Master: most connections at once.
    public var maxConnections = NodeDefaults.maxConnections
    /// Master: most connections from one IP address in the opening handshake.
    public var maxHandshakesPerAddress = NodeDefaults.maxHandshakesPerAddress
    /// Master: most connections from one IP address open at once.
    public var maxConnectionsPerAddress = NodeDefaults.maxConnectionsPerAddress
    /// Master: the largest message before authentication.
    public var preAuthenticationMessageBytes = NodeDefaults.preAuthenticationMessageBytes
    /// Master: the memory all unauthenticated connections may hold together.
    public var preAuthenticationMemoryBytes = NodeDefaults.preAuthenticationMemoryBytes
    /// Master: connection slots kept for authenticated terminals.
    public var reservedConnections = NodeDefaults.reservedConnections
    /// Master: secure handshakes one address may start (per second, and at once).
    public var handshakeRatePerAddress = RateLimit(
        operationsPerSecond: NodeDefaults.handshakeRatePerAddress, burst: NodeDefaults.handshakeBurstPerAddress)
    /// Master: secure handshakes all addresses may start together (per second, and at once).
    public var handshakeRateTotal = RateLimit(operationsPerSecond: NodeDefaults.handshakeRateTotal, burst: NodeDefaults.handshakeBurstTotal)
    /// Master: operations per second one terminal may send, sustained.
    public var rateLimitPerSecond = NodeDefaults.rateLimitPerSecond
    /// Master: operations one terminal may send in a burst.
    public var rateLimitBurst = NodeDefaults.rateLimitBurst
    /// Master: bytes of operation messages per second one terminal may send, sustained.
    public var rateLimitBytesPerSecond = NodeDefaults.rateLimitBytesPerSecond
    /// Master: bytes of operation messages one terminal may send at once.
    public var rateBurstBytes = NodeDefaults.rateBurstBytes
    /// Master: snapshots one slave may get in a row.
    public var snapshotBurst = NodeDefaults.snapshotBurst
    /// Master: then one snapshot per this interval, per slave.
    public var snapshotInterval = NodeDefaults.snapshotInterval
    /// Master: bytes one terminal's operations may add to the journal per hour.
    public var journalBudgetBytesPerHour = NodeDefaults.journalBudgetBytesPerHour
    /// Master: standbys (connected paired OrderSync slaves) that must hold a local API write
    /// before it is answered; 0: answered at once, without `"replicated"`.
    public var syncReplicas = NodeDefaults.syncReplicas
    /// Master: how long a local API write waits for `syncReplicas` standbys.
    public var syncTimeout = NodeDefaults.syncTimeout
    /// Per-connection limit of bytes queued for a slow reader before it is disconnected.
    public var maxPendingSendBytes = NodeDefaults.maxPendingSendBytes
    /// Master: the unsent bytes below which a terminal gets its next snapshot part.
    public var snapshotLowWaterBytes = NodeDefaults.snapshotLowWaterBytes
    /// Master: the most bytes of operations held for a terminal during its snapshot.
    public var maxHeldSnapshotBytes = NodeDefaults.maxHeldSnapshotBytes
    /// Master: admit StorePOS terminals (plain WebSocket, no subprotocol, neither authenticated
    /// nor encrypted) as before pairing existed.
    public var insecureStorePOS = false
    /// Master: with `insecureStorePOS`, admit them only from these ranges (empty: from anywhere).
    public var storePOSAllow: [AddressRange] = []
    /// Master: the TCP keepalive of StorePOS links (`--storepos-keepalive`), which are never
    /// dropped for being quiet (`NodeDefaults.storePOSKeepAlive`).
    public var storePOSKeepAlive = NodeDefaults.storePOSKeepAlive
    /// Master: the pause between withdrawing and announcing the service again after a StorePOS
    /// link was lost.
    public var storePOSReannouncePause = NodeDefaults.storePOSReannouncePause
    /// Master: the least time between two such re-announcements.
    public var storePOSReannounceInterval = NodeDefaults.storePOSReannounceInterval
    /// Master: the wait after each fence of a StorePOS app's connect sequence.
    public var storePOSSettle = NodeDefaults.storePOSSettle
    /// Serve `GET /metrics` over plain HTTP on this TCP address too (`--metrics-listen`); nil: only
    /// on the local API socket.
    public var metricsListen: MetricsAddress?
    /// Serve the store dashboard on this TCP address (`--http-listen`, master only); nil: off.
    public var httpListen: MetricsAddress?
    /// Whether the dashboard is served over TLS (`--http-tls`): by default when it listens
    /// beyond loopback.
    public var httpTLS = DashboardTLSMode.auto
    /// The interval of the summaries of repeated failures in the log (`master.connect_failed`).
    public var logSummaryInterval: Duration = NodeDefaults.logSummaryInterval
    /// Automatic failover (`--auto-failover`, off by default): a voter slave stands for election
    /// when its master is silent, a master keeps acknowledging only while a majority is heard.
    public var autoFailover = false

    /// Master: the DNS-SD instance name to publish: `--name`; without it `POSMaster` when
    /// StorePOS terminals are admitted (their apps look for no other), else the host name.
    public var serviceInstanceName: String {
        name ?? (insecureStorePOS ? NodeDefaults.storePOSServiceName : DataDirectory.hostName())
    }

    /// Whether a StorePOS app, which looks for the instance named `POSMaster` ignoring case and
    /// diacritics, finds an instance named `name`.
    public static func storePOSAppFinds(_ name: String) -> Bool {
        name.compare(NodeDefaults.storePOSServiceName, options: [.caseInsensitive, .diacriticInsensitive]) == .orderedSame
    }

    /// A configuration from its parts.
    public init(
        role: NodeRole, dataDirectory: String, store: String?, name: String?, serviceType: String,
        port: UInt16, listenAddress: String, masterURL: MasterURL?
    ) {
        self.role = role
        self.dataDirectory = dataDirectory
        self.store = store
        self.name = name
        self.serviceType = serviceType
        self.port = port
        self.listenAddress = listenAddress
        self.masterURL = masterURL
    }

    /// Path of the SQLite file.
    public var databasePath: String { (dataDirectory as NSString).appendingPathComponent(NodeDefaults.databaseFile) }
    /// Path of the local API socket.
    public var socketPath: String { (dataDirectory as NSString).appendingPathComponent(NodeDefaults.socketFile) }
    /// Path of the lock file.
    public var lockPath: String { (dataDirectory as NSString).appendingPathComponent(NodeDefaults.lockFile) }
    /// Path of the node's key file.
    public var keyPath: String { (dataDirectory as NSString).appendingPathComponent(NodeDefaults.keyFile) }
    /// Path of the dashboard's TLS certificate.
    public var dashboardCertificatePath: String {
        (dataDirectory as NSString).appendingPathComponent(NodeDefaults.dashboardCertificateFile)
    }
    /// Path of the dashboard certificate's private key.
    public var dashboardKeyPath: String { (dataDirectory as NSString).appendingPathComponent(NodeDefaults.dashboardKeyFile) }
    /// Whether the dashboard at `httpListen` is served over TLS.
    public var dashboardUsesTLS: Bool { httpListen.map { httpTLS.usesTLS(listeningOn: $0) } ?? false }
    /// Path of a master's previous key file (after a key rotation).
    public var previousKeyPath: String { (dataDirectory as NSString).appendingPathComponent(NodeDefaults.previousKeyFile) }

    /// Store ids: 1-64 letters, digits, '-', '_', '.'.
    public static func isValidStoreId(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.count <= 64
            && s.unicodeScalars.allSatisfy { CharacterSet.alphanumerics.contains($0) && $0.isASCII || "-_.".unicodeScalars.contains($0) }
    }

    /// DNS-SD service types: `_name._tcp` (RFC 6763 7: "_<Service>._tcp", service name 1-15 chars).
    public static func isValidServiceType(_ s: String) -> Bool {
        let parts = s.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[1] == "_tcp", parts[0].hasPrefix("_") else { return false }
        let name = parts[0].dropFirst()
        return (1...15).contains(name.count)
            && name.unicodeScalars.allSatisfy { ($0.isASCII && CharacterSet.alphanumerics.contains($0)) || $0 == "-" }
    }
}

/// A failure to start a node, with a message for the operator.
public struct NodeStartupError: Error, CustomStringConvertible {
    /// What went wrong and what to do.
    public var message: String
    /// What kind of failure it is (the command's exit status tells them apart).
    public var failure: StartupFailure = .general
    /// An error from its message.
    public init(_ message: String) { self.message = message }
    /// The fix in one line, when it is more precise than the kind's (``StartupFailure/fix``).
    public var specificFix: String?
    /// An error from its message and kind (and a fix more precise than the kind's).
    public init(_ message: String, failure: StartupFailure, fix: String? = nil) {
        self.message = message
        self.failure = failure
        self.specificFix = fix
    }
    /// The fix in one line.
    public var fix: String { specificFix ?? failure.fix }
    public var description: String { message }
}

extension Duration {
    /// The duration in seconds, for the CLI's options and for people.
    public var seconds: Double {
        let (whole, attoseconds) = components
        return Double(whole) + Double(attoseconds) / 1e18
    }
}

extension NodeConfiguration {
    /// The master engine's per-terminal limits beyond operations per second: bytes,
    /// snapshots and the journal budget.
    public var terminalLimits: TerminalLimits {
        var limits = TerminalLimits()
        limits.bytes = Allowance(perSecond: Double(rateLimitBytesPerSecond), capacity: Double(rateBurstBytes))
        let interval = Double(snapshotInterval.components.seconds) + Double(snapshotInterval.components.attoseconds) / 1e18
        limits.snapshots = Allowance(perSecond: 1 / max(0.001, interval), capacity: Double(snapshotBurst))
        limits.journalBytesPerHour = Double(journalBudgetBytesPerHour)
        return limits
    }
}
