import EventLoopIO
import Foundation
import Logging
import Synchronization
import XCTest

@testable import OrderSyncNode

/// A node's HTTP front-ends start together, stop together, and say where they are.
final class FrontEndsTests: XCTestCase {
    private var directory = ""

    override func setUp() {
        directory = NSTemporaryDirectory() + "ordersync-frontends-" + UUID().uuidString
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// One phase per step; a second stop and a stop before any start do nothing.
    func testPhasesFollowStartAndStop() {
        var state = FrontEndsPhase()
        XCTAssertEqual(state.phase, .stopped)
        XCTAssertFalse(state.stop(), "stopping what never started closes nothing")
        XCTAssertEqual(state.phase, .stopped)
        state.start()
        XCTAssertEqual(state.phase, .starting)
        state.started()
        XCTAssertEqual(state.phase, .running)
        XCTAssertTrue(state.stop())
        XCTAssertEqual(state.phase, .stopping)
        XCTAssertFalse(state.stop(), "a second stop while stopping closes nothing again")
        state.stopped()
        XCTAssertEqual(state.phase, .stopped)
        state.start()
        state.failedToStart()
        XCTAssertEqual(state.phase, .stopped, "a failed start leaves them stopped, to be started again")
    }

    /// Started: the local API socket answers `GET /metrics` from the given render; stopped: the
    /// socket file is gone, and stopping again does nothing.
    func testStartOpensTheAPISocketAndStopClosesIt() throws {
        let configuration = NodeConfiguration(
            role: .slave, dataDirectory: directory, store: nil, name: "bar", serviceType: NodeDefaults.serviceType,
            port: 0, listenAddress: "127.0.0.1", masterURL: nil)
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let loop = try EventLoop()
        let frontEnds = try FrontEnds(configuration: configuration, loop: loop, logger: Logger(label: "test"), dashboard: nil)
        XCTAssertEqual(frontEnds.phase, .stopped)
        try frontEnds.start(configuration, handler: { _, _ in }, metrics: { Array("ordersync_test 1\n".utf8) }, dashboard: nil)
        XCTAssertEqual(frontEnds.phase, .running)
        XCTAssertTrue(FileManager.default.fileExists(atPath: configuration.socketPath))

        // The client blocks: it runs on another thread while the loop serves it.
        let answer = Mutex<String>("")
        let dataDirectory = directory
        Thread {
            let text: String
            do { text = try LocalAPIClient(dataDirectory: dataDirectory).metrics() } catch { text = "failed: \(error)" }
            answer.withLock { $0 = text }
            loop.stop()
        }.start()
        loop.run()
        let text = answer.withLock { $0 }
        XCTAssertTrue(text.contains("ordersync_test 1"), text)

        frontEnds.stop()
        XCTAssertEqual(frontEnds.phase, .stopped)
        XCTAssertFalse(FileManager.default.fileExists(atPath: configuration.socketPath), "the socket file is removed")
        frontEnds.stop()
        XCTAssertEqual(frontEnds.phase, .stopped)
    }
}
