import Foundation
import SecureLink
import SyncCore

/// Documented defaults.
public enum NodeDefaults {
    /// TCP port of the master's WebSocket endpoint.
    public static let port: UInt16 = 7420
    /// DNS-SD service type, as StorePOS used.
    public static let serviceType = "_pos._tcp"
    /// Name of the SQLite file in the data directory.
    public static let databaseFile = "ordersync.sqlite"
    /// Name of the local API socket in the data directory.
    public static let socketFile = "ordersync.sock"
    /// Name of the lock file that keeps two daemons off one data directory.
    public static let lockFile = "ordersync.lock"
    /// Name of the file holding the node's static private key (mode 0600).
    public static let keyFile = "node.key"
    /// Name of the file holding a master's previous static private key after a key rotation
    /// (mode 0600); it still answers slaves that know only the previous key.
    public static let previousKeyFile = "node.key.previous"
    /// Name of the dashboard's TLS certificate (self-signed, made at the first start that
    /// serves the dashboard over TLS).
    public static let dashboardCertificateFile = "dashboard-cert.pem"
    /// Name of the dashboard certificate's private key (mode 0600).
    public static let dashboardKeyFile = "dashboard-key.pem"
    /// WebSocket path on the master.
    public static let webSocketPath = "/"
    /// The DNS-SD instance name StorePOS apps look for: they browse `_pos._tcp` and connect only
    /// to the instance of this name (compared ignoring case and diacritics). A master admitting
    /// StorePOS terminals takes it when `--name` is not given.
    public static let storePOSServiceName = "POSMaster"
    /// Orders per snapshot message.
    public static let snapshotChunk = 200
    /// The largest snapshot part a master sends: `snapshotChunk` orders of at most
    /// `OperationPlanner.maxOrderBytes` each (with room for `version`, `status` and the
    /// message's own members). A master seals, and a slave accepts, messages this large on a
    /// secure link even when `--max-message-size` is smaller.
    public static let largestSnapshotPartBytes = snapshotChunk * (OperationPlanner.maxOrderBytes + 1024) + (64 << 10)
    /// A broadcast whose JSON is larger than this goes out in parts of at most this many bytes
    /// (`BroadcastParts`, `Docs/PROTOCOL.md` 4.1.1): no message outgrows what a terminal
    /// accepts. The master refuses an operation whose broadcast would outgrow
    /// `maxPendingSendBytes` (`too_large`), and catches a terminal up with at most half of it
    /// (beyond, a snapshot).
    public static let broadcastPartBytes = 1 << 20
    /// Largest accepted WebSocket message.
    public static let maxMessageBytes = 1 << 20
    /// Interval after which an idle link is pinged.
    public static let pingInterval: Duration = .seconds(10)
    /// Silence after which a peer is declared dead.
    public static let peerTimeout: Duration = .seconds(30)
    /// How long a started WebSocket frame may take to complete.
    public static let frameTimeout: Duration = .seconds(15)
    /// How long the opening handshake may take after the TCP connection.
    public static let handshakeTimeout: Duration = .seconds(5)
    /// Most terminals (TCP connections) the master serves at once.
    public static let maxConnections = 1024
    /// Most connections from one IP address still in the opening handshake.
    public static let maxHandshakesPerAddress = 8
    /// Most connections from one IP address open at once.
    public static let maxConnectionsPerAddress = 64
    /// The largest WebSocket message a master accepts from a connection that has not
    /// authenticated yet (its handshake messages: IK's first is 96 bytes, a pairing terminal's
    /// third about 130 plus its name); a larger frame header closes it (1009) before its payload
    /// is read.
    public static let preAuthenticationMessageBytes = 1024
    /// The most memory all connections that have not authenticated yet may hold together.
    public static let preAuthenticationMemoryBytes = 16 << 20
    /// Connection slots only authenticated terminals (and admitted StorePOS apps) may hold.
    public static let reservedConnections = 64
    /// Secure handshakes one IP address may start per second, sustained.
    public static let handshakeRatePerAddress: Double = 2
    /// Secure handshakes one IP address may start at once.
    public static let handshakeBurstPerAddress: Double = 10
    /// Secure handshakes all addresses together may start per second, sustained.
    public static let handshakeRateTotal: Double = 32
    /// Secure handshakes all addresses together may start at once.
    public static let handshakeBurstTotal: Double = 64
    /// Handshake failures of one address logged in full per summary interval; the others are
    /// counted in the address's `peer.handshake_summary`.
    public static let handshakeFailureLines = 5
    /// Operations per second one terminal may send, sustained.
    public static let rateLimitPerSecond: Double = 200
    /// Operations one terminal may send at once (the token bucket's capacity).
    public static let rateLimitBurst: Double = 1000
    /// Bytes of operation messages per second one terminal may send, sustained (1 MiB).
    public static let rateLimitBytesPerSecond = 1 << 20
    /// Bytes of operation messages one terminal may send at once (4 MiB; at least the largest
    /// message, `maxMessageBytes`).
    public static let rateBurstBytes = 4 << 20
    /// Snapshots one OrderSync slave may get in a row.
    public static let snapshotBurst = 4
    /// Then one snapshot per this interval, per slave.
    public static let snapshotInterval: Duration = .seconds(15)
    /// Bytes one terminal's operations may add to the journal per hour (128 MiB).
    public static let journalBudgetBytesPerHour = 128 << 20
    /// Standbys a write through the master's local API waits for before it is answered.
    public static let syncReplicas = 1
    /// How long such a write waits for them before it is answered `"replicated": false`.
    public static let syncTimeout: Duration = .seconds(2)
    /// How long a slave that knows no store watches the LAN before joining the only store.
    public static let storeChoiceSettle: Duration = .milliseconds(1500)
    /// How long a slave's local API waits for the master's answer.
    public static let forwardTimeout: Duration = .seconds(10)
    /// First delay before a slave reconnects to its master; it doubles after each failure.
    public static let reconnectDelay: Duration = .milliseconds(250)
    /// Longest delay before a slave reconnects to its master.
    public static let reconnectDelayLimit: Duration = .seconds(5)
    /// Longest wait for peers to answer the close handshake when a node shuts down.
    public static let shutdownGrace: Duration = .milliseconds(2500)
    /// How long a slave collects applied operations before it acknowledges them.
    public static let ackDelay: Duration = .milliseconds(200)
    /// How long the master stops accepting when it runs out of file descriptors.
    public static let acceptPause: Duration = .milliseconds(500)
    /// Repeated failures are logged once, then summarised at most this often.
    public static let logSummaryInterval: Duration = .seconds(60)
    /// Per-connection limit of bytes queued for a slow reader before it is disconnected.
    public static let maxPendingSendBytes = 16 << 20
    /// The master sends a terminal the next snapshot part only while fewer bytes than this
    /// wait unsent on its link.
    public static let snapshotLowWaterBytes = 1 << 20
    /// The most bytes of operations held for a terminal while its snapshot goes out; beyond,
    /// it is closed and gets a fresh snapshot when it reconnects.
    public static let maxHeldSnapshotBytes = 8 << 20
    /// A StorePOS terminal's link is kept while TCP holds it: keepalive probes start after it
    /// has been idle this long (then every third of it, three probes), and data it does not
    /// acknowledge for twice this long ends the link (`TCP_USER_TIMEOUT`).
    public static let storePOSKeepAlive: Duration = .seconds(30)
    /// After a StorePOS terminal's link was lost, the master withdraws its service and
    /// announces it again after this pause, so the app (which reconnects only to a service that
    /// comes back) receives its connect sequence again.
    public static let storePOSReannouncePause: Duration = .milliseconds(1500)
    /// At most one such re-announcement per this interval; losses in between share the next.
    public static let storePOSReannounceInterval: Duration = .seconds(10)
    /// A StorePOS app's connect sequence waits this long after each fence (once its link has
    /// written everything) before what follows: the app handles the Removes before the Creates
    /// arrive, and the Creates before the changes held meanwhile (`Docs/PROTOCOL.md` 4.2.1).
    public static let storePOSSettle: Duration = .seconds(1)
}
