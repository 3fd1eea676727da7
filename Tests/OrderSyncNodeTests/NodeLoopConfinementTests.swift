import CIMode
import EventLoopIO
import Foundation
import Logging
import Synchronization
import XCTest

@testable import OrderSyncNode

/// A node belongs to its loop's thread: other threads reach it only through its `Sendable`
/// shutdown handle, and a call from another thread while the loop runs traps in debug builds.
final class NodeLoopConfinementTests: XCTestCase {
    private var directory = ""

    override func setUp() {
        directory = NSTemporaryDirectory() + "ordersync-confinement-" + UUID().uuidString
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A master on `loop`, not running, on loopback with a port of its own and no discovery.
    private func master(on loop: EventLoop) throws -> MasterNode {
        let configuration = NodeConfiguration(
            role: .master, dataDirectory: directory, store: "shop1", name: "front", serviceType: NodeDefaults.serviceType,
            port: 0, listenAddress: "127.0.0.1", masterURL: nil)
        var logger = Logger(label: "test.confinement")
        logger.logLevel = .critical
        return try MasterNode(
            configuration: configuration, loop: loop, dataDirectory: try DataDirectory(claimingFor: configuration),
            discovery: nil, logger: logger)
    }

    /// A request made on another thread reaches the node on its loop: the master begins its
    /// shutdown (no terminals: it stops the loop at once), so `run()` returns.
    func testShutdownHandleFromAnotherThreadStopsTheNode() throws {
        let loop = try EventLoop()
        let node = try master(on: loop)
        let handle = node.shutdownHandle
        loop.execute {
            Thread { handle.requestShutdown() }.start()
        }
        // A stuck node fails the test instead of hanging it.
        let finished = DispatchSemaphore(value: 0)
        let timedOut = Atomic<Bool>(false)
        Thread {
            guard finished.wait(timeout: .now() + 10) == .timedOut else { return }
            timedOut.store(true, ordering: .relaxed)
            loop.stop()
        }.start()
        try node.run()
        finished.signal()
        XCTAssertFalse(timedOut.load(ordering: .relaxed), "the request never reached the node")
    }

    /// A handle outliving its node does nothing: the request finds no node on the loop.
    func testShutdownHandleOfAGoneNodeDoesNothing() throws {
        let loop = try EventLoop()
        var node: MasterNode? = try master(on: loop)
        let handle = try XCTUnwrap(node).shutdownHandle
        weak let gone = node
        node = nil
        XCTAssertNil(gone, "the handle keeps no node alive")
        handle.requestShutdown()
        loop.execute { loop.stop() }
        loop.run()
    }

    /// Set in the second process (to the data directory to use): it calls the node off its
    /// loop, and traps.
    private static let childVariable = "ORDERSYNC_LOOP_CONFINEMENT_CHILD"
    /// Printed by the child just before the call that must trap.
    private static let callingMarker = "calling the node off its loop"

    /// In a debug build, reading a running node's metrics from a thread other than its loop's
    /// traps with the loop's message. Run in a second process of this test bundle (a trap ends
    /// the process); the child prints a marker before the call, so a trap anywhere else fails.
    func testACallOffTheLoopTrapsInDebugBuilds() throws {
        if let parentsDirectory = ProcessInfo.processInfo.environment[Self.childVariable] {
            // The parent removes the directory: this process ends in the trap.
            directory = parentsDirectory
            return try callOffTheLoop()
        }
        var assertionsRun = false
        assert({ assertionsRun = true }() == ())
        guard assertionsRun else {
            // CI runs the debug build, where the assertion exists: a build without it fails there.
            if CIMode.isOn { return XCTFail("assertions are compiled out of this build") }
            throw XCTSkip("assertions are compiled out of this build")
        }
        let bundle = CommandLine.arguments[0]
        guard bundle.hasSuffix(".xctest"), FileManager.default.isExecutableFile(atPath: bundle) else {
            let why = "the test bundle is not an executable .xctest (\(bundle)): cannot start a second process"
            if CIMode.isOn { return XCTFail(why) }
            throw XCTSkip(why)
        }
        let child = Process()
        child.executableURL = URL(fileURLWithPath: bundle)
        child.arguments = ["OrderSyncNodeTests.NodeLoopConfinementTests/testACallOffTheLoopTrapsInDebugBuilds"]
        var environment = ProcessInfo.processInfo.environment
        environment[Self.childVariable] = directory
        // No backtracer in the child: `swift-backtrace` would inherit its stderr and, under
        // AddressSanitizer, outlive it, and the read below would wait for it forever.
        environment["SWIFT_BACKTRACE"] = "enable=no"
        child.environment = environment
        let output = Pipe()
        let errors = Pipe()
        child.standardOutput = output
        child.standardError = errors
        try child.run()
        // Read both to the end (the child exits either way), then reap it.
        let errorText = Mutex<String>("")
        let reader = Thread {
            let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            errorText.withLock { $0 = text }
        }
        reader.start()
        let outputText = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        child.waitUntilExit()
        while !reader.isFinished { usleep(1000) }
        let stderr = errorText.withLock { $0 }
        XCTAssertTrue(outputText.contains(Self.callingMarker), "the child never reached the call:\n\(outputText.suffix(2000))")
        XCTAssertEqual(child.terminationReason, .uncaughtSignal, "the call off the loop did not trap:\n\(outputText.suffix(2000))")
        XCTAssertTrue(stderr.contains("called off the event loop's thread"), stderr.suffix(2000).description)
    }

    /// The child's half: runs a master's loop on a thread of its own, then asks the node for its
    /// metrics from the test's thread.
    private func callOffTheLoop() throws {
        let loop = try EventLoop()
        let node = try master(on: loop)
        let running = DispatchSemaphore(value: 0)
        loop.execute { running.signal() }
        Thread { loop.run() }.start()
        running.wait()
        // Unbuffered: the marker is out before the trap.
        FileHandle.standardOutput.write(Data((Self.callingMarker + "\n").utf8))
        _ = node.renderMetrics()
        XCTFail("renderMetrics ran off the loop's thread without trapping")
    }
}
