import EventLoopIO
import Foundation
import Logging
import NodePolicy
import OrderSyncNode
import SecureLink
import Synchronization
import XCTest

/// A node running in this process on a thread of its own, built on its own loop, a temp data
/// directory and no discovery.
final class RunningNode: Sendable {
    let dataDirectory: String
    let port: UInt16
    private let shutdown: @Sendable () -> Void
    private let finished = DispatchSemaphore(value: 0)

    /// Starts a master (`masterURL` nil) or a slave of `masterURL`; returns once it serves.
    init(
        role: NodeRole, dataDirectory: String, name: String, masterURL: MasterURL? = nil,
        discovery: (any ServiceDiscovery & Sendable)? = nil, configure: (inout NodeConfiguration) -> Void = { _ in }
    ) throws {
        self.dataDirectory = dataDirectory
        var configuration = NodeConfiguration(
            role: role, dataDirectory: dataDirectory, store: role == .master ? "shop1" : nil,
            name: name, serviceType: NodeDefaults.serviceType, port: 0,
            listenAddress: "127.0.0.1", masterURL: masterURL)
        configuration.pingInterval = .seconds(1)
        configure(&configuration)
        let config = configuration
        let started = DispatchSemaphore(value: 0)
        let outcome = Mutex<Result<(UInt16, @Sendable () -> Void), any Error>?>(nil)
        let finished = self.finished
        let thread = Thread {
            var logger = Logger(label: "test.\(name)")
            logger.logLevel = .critical
            do {
                let loop = try EventLoop()
                let directory = try DataDirectory(claimingFor: config)
                let node = try Node(
                    configuration: config, loop: loop, dataDirectory: directory,
                    discovery: discovery, logger: logger, reconnectJitter: .none)
                let handle = node.shutdownHandle
                outcome.withLock { $0 = .success((node.masterPort ?? 0, { handle.requestShutdown() })) }
                loop.execute { started.signal() }
                try node.run()
            } catch {
                outcome.withLock { $0 = .failure(error) }
                started.signal()
            }
            finished.signal()
        }
        thread.start()
        started.wait()
        let (port, shutdown) = try XCTUnwrap(outcome.withLock { $0 }).get()
        self.port = port
        self.shutdown = shutdown
    }

    /// The node's status through the local API, as the CLI fetches it.
    func status() throws -> NodeStatus {
        try LocalAPIClient(dataDirectory: dataDirectory).status()
    }

    /// Shuts the node down and waits until its loop returned.
    func stop() {
        shutdown()
        XCTAssertEqual(finished.wait(timeout: .now() + 10), .success, "the node did not stop")
    }
}

/// `ordersync status` from real nodes: a master and a slave on loopback, their status fetched
/// through the local API client, decoded and rendered as the CLI prints it.
final class NodeStatusTests: XCTestCase {
    private var directories: [String] = []

    override func tearDown() {
        for d in directories { try? FileManager.default.removeItem(atPath: d) }
    }

    private func temporaryDirectory() -> String {
        let d = NSTemporaryDirectory() + "ordersync-status-" + UUID().uuidString
        directories.append(d)
        return d
    }

    /// Polls the node's status until `condition` holds (the nodes change on their own threads).
    private func waitForStatus<T>(
        _ node: RunningNode, _ what: String, timeout: TimeInterval = 10,
        _ condition: (NodeStatus) -> T?
    ) throws -> T {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let value = condition(try node.status()) { return value }
            if Date() > deadline { XCTFail("timed out waiting for \(what): \(try node.status())"); throw CancellationError() }
            usleep(20_000)
        }
    }

    func testMasterAndSlaveStatusAsTheCLIShowsIt() throws {
        let master = try RunningNode(role: .master, dataDirectory: temporaryDirectory(), name: "front")
        let url = MasterURL(host: "127.0.0.1", port: master.port)

        guard case .master(let alone) = try master.status() else { return XCTFail("a master answered a slave's status") }
        XCTAssertEqual(alone.port, master.port)
        let aloneText = StatusText.render(.master(alone))
        XCTAssertTrue(aloneText.contains("role:      master\nstore:     shop1\nname:      front\norders:    0\nseq:       0"), aloneText)
        XCTAssertTrue(aloneText.contains("avahi:     not used"), aloneText)
        XCTAssertTrue(aloneText.contains("port:      \(master.port)"), aloneText)
        XCTAssertTrue(aloneText.contains("terminals: 0 connected, 0 known slaves, 0 away"), aloneText)
        XCTAssertTrue(aloneText.contains("replicas:  local API writes wait for 1 standby(s)"), aloneText)
        XCTAssertTrue(aloneText.contains("voters:    1 (majority 1): front"), aloneText)
        XCTAssertTrue(aloneText.hasSuffix("tombstones: 0"), aloneText)

        let slave = try master.pairedSlave(dataDirectory: temporaryDirectory(), name: "bar-2")
        let live = try waitForStatus(slave, "the slave to go live") { status -> SlaveStatus? in
            guard case .slave(let s) = status, s.master.state == .live else { return nil }
            return s
        }
        XCTAssertEqual(live.master.url, url.description)
        XCTAssertNil(live.master.lastError)
        XCTAssertEqual(live.avahi, .notUsedWithFixedMaster)
        let slaveText = StatusText.render(.slave(live))
        XCTAssertTrue(slaveText.contains("role:      slave\nstore:     shop1\nname:      bar-2"), slaveText)
        XCTAssertTrue(slaveText.contains("master:    live \(url) - (for "), slaveText)
        XCTAssertTrue(slaveText.contains("lag:       0 (master at 0)"), slaveText)
        XCTAssertTrue(slaveText.contains("outbox:    0 local changes waiting for the master"), slaveText)
        XCTAssertTrue(slaveText.contains("held:      0 (its standby copy, on disk)"), slaveText)
        XCTAssertFalse(slaveText.contains("last error"), slaveText)

        let connected = try waitForStatus(master, "the master to know the slave") { status -> String? in
            guard case .master(let m) = status, m.peers.first?.terminal == "bar-2", m.terminals.count == 1 else { return nil }
            return StatusText.render(status)
        }
        let lines = connected.split(separator: "\n").map(String.init)
        XCTAssertTrue(lines.contains("terminals: 1 connected, 1 known slave, 0 away"), connected)
        let bar = try XCTUnwrap(lines.first { $0.hasPrefix("  connected  bar-2  127.0.0.1:") }, connected)
        XCTAssertTrue(bar.contains("  ordersync  up ") && bar.contains("acked 0  lag 0"), bar)
        XCTAssertEqual(
            lines.filter { $0.hasPrefix("  ") && $0.contains("bar-2") }.count, 1, "a connected slave is listed once: \(connected)")
        XCTAssertTrue(lines.contains("voters:    2 (majority 2): front, bar-2"), connected)
        XCTAssertTrue(lines.contains("term:      1"), connected)

        slave.stop()
        let away = try waitForStatus(master, "the master to see the slave leave") { status -> String? in
            guard case .master(let m) = status, m.peers.isEmpty else { return nil }
            return StatusText.render(status)
        }
        XCTAssertTrue(away.contains("terminals: 0 connected, 1 known slave, 1 away"), away)
        let awayLine = try XCTUnwrap(away.split(separator: "\n").first { $0.hasPrefix("  away       bar-2  127.0.0.1:") }, away)
        XCTAssertTrue(awayLine.contains("last seen ") && awayLine.contains("acked 0  lag 0"), String(awayLine))
        master.stop()
    }

    func testSlaveWhoseMasterIsGoneWaitsToRetryAndShowsWhy() throws {
        // A port nothing listens on: every attempt is refused, and the slave waits between them.
        let probe = try RunningNode(role: .master, dataDirectory: temporaryDirectory(), name: "gone")
        let url = MasterURL(host: "127.0.0.1", port: probe.port)
        probe.stop()
        let slave = try RunningNode(
            role: .slave, dataDirectory: temporaryDirectory(), name: "patio", masterURL: url,
            configure: { $0.pairingCode = PairingCode.generate() })
        let text = try waitForStatus(slave, "the slave to report a failed attempt") { status -> String? in
            guard case .slave(let s) = status, s.master.lastError != nil,
                s.master.state == .waiting || s.master.state == .connecting
            else { return nil }
            return StatusText.render(status)
        }
        XCTAssertTrue(text.contains("store:     -"), text)
        XCTAssertTrue(text.contains("master id: not paired (pairing)"), text)
        XCTAssertTrue(text.contains("last error: "), text)
        XCTAssertTrue(text.contains(" \(url) - (for "), text)
        slave.stop()
    }

    func testStatusIsEncodedWithTheDocumentedMembersAndNullsForAbsentValues() throws {
        let master = try RunningNode(role: .master, dataDirectory: temporaryDirectory(), name: "front")
        defer { master.stop() }
        let response = try LocalAPIClient(dataDirectory: master.dataDirectory).send(method: "GET", path: "/v1/status")
        XCTAssertEqual(response.status, 200)
        let object = try XCTUnwrap(response.body.objectValue)
        for member in [
            "role", "version", "store", "name", "nodeId", "epoch", "seq", "orders", "port", "dataDir", "serviceType",
            "serviceName", "avahi", "uptimeSeconds", "peers", "terminals", "tombstones",
        ] {
            XCTAssertNotNil(object[member], "status has no \(member): \(response.body)")
        }
        XCTAssertEqual(object["serviceName"], .null)
        XCTAssertEqual(object["role"]?.stringValue, "master")
    }
}
