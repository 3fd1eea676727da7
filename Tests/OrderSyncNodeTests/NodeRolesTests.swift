import EventLoopIO
import Foundation
import Logging
import XCTest

@testable import OrderSyncNode

/// A node's role is a state: started once, left to stop or to play another on the same loop.
final class NodeRolesTests: XCTestCase {
    private typealias Roles = NodeRoles<String>

    /// `Action` is not `Equatable` (roles are nodes): a description to compare.
    private func text(_ action: Roles.Action) -> String {
        switch action {
        case .start(let r): return "start \(r)"
        case .leave(let r): return "leave \(r)"
        case .stopLoop(let r): return "stop loop, finish \(r)"
        case .replace(let old, let new): return "finish \(old), start \(new)"
        case .none: return "none"
        }
    }

    func testStartThenStop() {
        var roles = Roles()
        XCTAssertNil(roles.current)
        XCTAssertEqual(text(roles.leave(then: .stop)), "none", "nothing to leave before the start")
        XCTAssertEqual(text(roles.start("master")), "start master")
        XCTAssertEqual(roles.current, "master")
        XCTAssertEqual(text(roles.leave(then: .stop)), "leave master")
        XCTAssertEqual(roles.current, "master", "the role is played until it has left")
        XCTAssertEqual(text(roles.leave(then: .stop)), "none", "a second stop while leaving does nothing")
        XCTAssertEqual(text(roles.roleLeft()), "stop loop, finish master")
        XCTAssertTrue(roles.isStopped)
        XCTAssertNil(roles.current)
        XCTAssertEqual(text(roles.roleLeft()), "none", "a late report after the stop does nothing")
    }

    /// Leaving for another role keeps the loop: the old role is finished and the new one
    /// started, and it can be left again.
    func testLeavingForAnotherRoleKeepsTheLoop() {
        var roles = Roles()
        _ = roles.start("slave")
        XCTAssertEqual(text(roles.leave(then: .play("master"))), "leave slave")
        XCTAssertEqual(text(roles.roleLeft()), "finish slave, start master")
        XCTAssertFalse(roles.isStopped)
        XCTAssertEqual(roles.current, "master")
        XCTAssertEqual(text(roles.leave(then: .stop)), "leave master")
        XCTAssertEqual(text(roles.roleLeft()), "stop loop, finish master")
    }

    /// A stop asked while leaving for another role wins: the next role never starts.
    func testAStopWhileLeavingForAnotherRoleWins() {
        var roles = Roles()
        _ = roles.start("slave")
        _ = roles.leave(then: .play("master"))
        XCTAssertEqual(text(roles.leave(then: .stop)), "none", "the role is already leaving")
        XCTAssertEqual(text(roles.roleLeft()), "stop loop, finish slave")
        XCTAssertTrue(roles.isStopped)
    }

    /// A role that ends on its own (SIGTERM reaches it directly, a refused pairing) stops the node.
    func testARoleEndingOnItsOwnStopsTheNode() {
        var roles = Roles()
        _ = roles.start("slave")
        XCTAssertEqual(text(roles.roleLeft()), "stop loop, finish slave")
        XCTAssertEqual(text(roles.leave(then: .play("master"))), "none", "nothing to leave once stopped")
    }

    // MARK: A node on a real loop

    private var directories: [String] = []

    override func tearDown() {
        for d in directories { try? FileManager.default.removeItem(atPath: d) }
    }

    /// A master on `loop`, not running, with a data directory of its own and no discovery.
    private func master(on loop: EventLoop, name: String) throws -> (MasterNode, NodeConfiguration) {
        let directory = NSTemporaryDirectory() + "ordersync-roles-" + UUID().uuidString
        directories.append(directory)
        let configuration = NodeConfiguration(
            role: .master, dataDirectory: directory, store: "shop1", name: name, serviceType: NodeDefaults.serviceType,
            port: 0, listenAddress: "127.0.0.1", masterURL: nil)
        var logger = Logger(label: "test.roles")
        logger.logLevel = .critical
        let node = try MasterNode(
            configuration: configuration, loop: loop, dataDirectory: try DataDirectory(claimingFor: configuration),
            discovery: nil, logger: logger)
        return (node, configuration)
    }

    /// The transition on a running loop: the first master leaves (its API socket closes), the
    /// second starts on the same loop (its socket opens), and a stop then ends the loop.
    func testANodeLeavesItsRoleForAnotherOnTheSameLoop() throws {
        let loop = try EventLoop()
        let (first, firstConfiguration) = try master(on: loop, name: "first")
        let (second, secondConfiguration) = try master(on: loop, name: "second")
        let node = Node(.master(first))
        // Carried to the loop and unwrapped there (nodes are not `Sendable`).
        let bound = LoopBound((node: node, next: second), loop: loop)
        let seen = LoopBound(Box(), loop: loop)
        let paths = (first: firstConfiguration.socketPath, second: secondConfiguration.socketPath)
        loop.execute {
            let (node, second) = bound.value
            let exists = { FileManager.default.fileExists(atPath: $0) }
            seen.value.lines.append("before: \(exists(paths.first)) \(exists(paths.second))")
            node.leave(then: .play(.master(second)), reason: "test")
            seen.value.lines.append("after: \(exists(paths.first)) \(exists(paths.second))")
            if case .master(let playing) = node.role { seen.value.lines.append("playing second: \(playing === second)") }
            node.leave(then: .stop, reason: "test")
        }
        try node.run()
        XCTAssertEqual(seen.value.lines, ["before: true false", "after: false true", "playing second: true"])
        XCTAssertNil(node.role, "stopped")
        XCTAssertFalse(FileManager.default.fileExists(atPath: secondConfiguration.socketPath), "the second role stopped too")
    }

    /// What the loop saw, read on the test's thread after the loop returned.
    private final class Box {
        var lines: [String] = []
    }
}
