import Discovery
import EventLoopIO
import Foundation
import Glibc
import JSON
import Logging
import NodePolicy
import Noise
import OrderSyncNode
import SecureLink
import Synchronization
import XCTest

/// DNS-SD that reports a fixed list of services on every browse.
// @unchecked Sendable: made on the test's thread, then used only on the node's loop.
private final class ScriptedDiscovery: ServiceDiscovery, @unchecked Sendable {
    let services: [ResolvedService]
    private var report: (@Sendable (DiscoveryEvent) -> Void)?

    init(services: [ResolvedService]) { self.services = services }

    func start(reporting report: @escaping @Sendable (DiscoveryEvent) -> Void) throws {
        self.report = report
        report(.daemonAvailable)
    }
    func publish(_ announcement: ServiceAnnouncement) {}
    func unpublish() {}
    func browse(type: String) { for s in services { report?(.serviceFound(s)) } }
    func rebrowse(type: String) { browse(type: type) }
    func stop() { report = nil }
}

/// A paired slave that discovers its master among rogues: a master announcing another key's id
/// is never connected to; one announcing no id is tried, fails its handshake and is left for the
/// trusted one.
final class SlaveDiscoveryTrustTests: XCTestCase {
    private func service(_ name: String, port: UInt16, id: String?) -> ResolvedService {
        var txt = ["proto": "ordersync/1", "store": "shop1", "epoch": "e1", "path": "/"]
        txt["id"] = id
        return ResolvedService(
            name: name, type: NodeDefaults.serviceType, domain: "local", hostName: "\(name).local", address: "127.0.0.1",
            port: port, txt: txt, interfaceIndex: 1)
    }

    func testSkipsAnotherKeysIdTriesAnIdlessOneAndSyncsWithTheTrustedMaster() throws {
        let trustedKey = NoiseKeyPair.generate()
        let trusted = try FakeSecureMaster(.init(code: nil, keys: [trustedKey]))
        defer { trusted.stop() }
        let rogue = try FakeSecureMaster(.init(code: nil, keys: [NoiseKeyPair.generate()]))
        defer { rogue.stop() }
        let idless = try FakeSecureMaster(.init(code: nil, keys: [NoiseKeyPair.generate()]))
        defer { idless.stop() }

        let directory = NSTemporaryDirectory() + "ordersync-discovery-" + UUID().uuidString
        addTeardownBlock { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        XCTAssertEqual(chmod(directory, 0o700), 0)
        try MasterTrust(
            store: "shop1", publicKey: trustedKey.publicKey, pairedAtMillis: 1,
            codeDigest: MasterTrust.codeDigest(ofCodeBytes: PairingCode.generate().bytes)
        ).write(to: directory + "/" + NodeDefaults.masterTrustFile)
        // Seen in this order: the rogue first (taken at once if it were admitted), then one
        // without an id (tried at once), then the trusted master.
        let discovery = ScriptedDiscovery(services: [
            service("Totally legit", port: rogue.port, id: NodeIdentity.nodeId(publicKey: NoiseKeyPair.generate().publicKey)),
            service("Old build", port: idless.port, id: nil),
            service("Counter", port: trusted.port, id: NodeIdentity.nodeId(publicKey: trustedKey.publicKey)),
        ])
        var configuration = NodeConfiguration(
            role: .slave, dataDirectory: directory, store: "shop1", name: "bar-2", serviceType: NodeDefaults.serviceType,
            port: 0, listenAddress: "127.0.0.1", masterURL: nil)
        configuration.pingInterval = .seconds(1)
        let config = configuration

        let started = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        let shutdown = Mutex<(@Sendable () -> Void)?>(nil)
        let thread = Thread {
            var logger = Logger(label: "test.discovery")
            logger.logLevel = .critical
            do {
                let loop = try EventLoop()
                let node = try SlaveNode(
                    configuration: config, loop: loop, dataDirectory: try DataDirectory(claimingFor: config),
                    discovery: discovery, logger: logger, reconnectJitter: .none)
                let handle = node.shutdownHandle
                shutdown.withLock { $0 = { handle.requestShutdown() } }
                loop.execute { started.signal() }
                try node.run()
            } catch {
                XCTFail("the slave failed: \(error)")
                started.signal()
            }
            finished.signal()
        }
        thread.start()
        started.wait()
        defer {
            shutdown.withLock { $0 }?()
            XCTAssertEqual(finished.wait(timeout: .now() + 10), .success)
        }

        try trusted.wait(for: "a hello at the trusted master") { links in
            links.contains { link in link.messages.contains { $0.contains("\"hello\"") } }
        }
        XCTAssertEqual(rogue.seen.count, 0, "a master announcing another key's id is never connected to")
        XCTAssertEqual(idless.seen.count, 1, "a master without an id is tried once, then the others")
        XCTAssertEqual(idless.seen.first?.messages, [], "and gets nothing")
    }
}
