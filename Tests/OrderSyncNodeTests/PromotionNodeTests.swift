import Foundation
import JSON
import NodePolicy
import OrderStore
import XCTest

@testable import OrderSyncNode

/// `POST /v1/promote` on real nodes in one process: a paired slave whose master is gone becomes
/// the store's master on the same loop, store writer, data directory lock and local API socket;
/// a slave without a standby copy, or a master, refuses.
final class PromotionNodeTests: XCTestCase {
    private var directories: [String] = []

    override func tearDown() {
        for d in directories { try? FileManager.default.removeItem(atPath: d) }
    }

    private func temporaryDirectory() -> String {
        let d = NSTemporaryDirectory() + "ordersync-promote-" + UUID().uuidString
        directories.append(d)
        return d
    }

    /// Polls the node's status until `condition` holds (the nodes change on their own threads).
    private func waitForStatus<T>(_ node: RunningNode, _ what: String, _ condition: (NodeStatus) -> T?) throws -> T {
        let deadline = Date().addingTimeInterval(10)
        while true {
            if let status = try? node.status(), let value = condition(status) { return value }
            if Date() > deadline {
                XCTFail("timed out waiting for \(what): \(String(describing: try? node.status()))")
                throw CancellationError()
            }
            usleep(20_000)
        }
    }

    private func promote(_ node: RunningNode, force: Bool = false) throws -> LocalAPIResponse {
        try LocalAPIClient(dataDirectory: node.dataDirectory).send(
            method: "POST", path: "/v1/promote", body: PromoteRequest(force: force).jsonValue)
    }

    /// A master with one order and a paired slave that holds it, the master then stopped.
    private func slaveOfAStoppedMaster() throws -> (slaveDirectory: String, masterURL: MasterURL) {
        let master = try RunningNode(role: .master, dataDirectory: temporaryDirectory(), name: "front")
        let url = MasterURL(host: "127.0.0.1", port: master.port)
        let order = JSONValue.object(JSONObject([("uuid", .string(UUID().uuidString.lowercased())), ("customerName", .string("Ann"))]))
        let created = try LocalAPIClient(dataDirectory: master.dataDirectory).send(method: "POST", path: "/v1/orders", body: order)
        XCTAssertEqual(created.status, 201)
        let slaveDirectory = temporaryDirectory()
        let slave = try master.pairedSlave(dataDirectory: slaveDirectory, name: "bar-2")
        _ = try waitForStatus(slave, "the slave to hold the order") { status -> Bool? in
            guard case .slave(let s) = status, s.master.state == .live, s.orders == 1 else { return nil }
            return true
        }
        master.stop()
        slave.stop()
        return (slaveDirectory, url)
    }

    private func metadata(_ directory: String, _ keys: [String]) throws -> [String: String] {
        let db = try OrderDatabase(path: directory + "/" + NodeDefaults.databaseFile)
        defer { db.close() }
        var out: [String: String] = [:]
        for k in keys { out[k] = try db.metadata(k) }
        return out
    }

    func testASlaveWithoutAStandbyCopyRefusesAndStaysASlave() throws {
        let (directory, url) = try slaveOfAStoppedMaster()
        let slave = try RunningNode(role: .slave, dataDirectory: directory, name: "bar-2", masterURL: url)
        defer { slave.stop() }
        let answer = try promote(slave)
        XCTAssertEqual(answer.status, 409, "\(answer.body)")
        XCTAssertEqual(answer.body.objectValue?["error"]?.objectValue?["code"]?.stringValue, "no_standby_copy")
        guard case .slave = try slave.status() else { return XCTFail("the slave changed roles") }
    }

    func testAMasterAnswersNotASlave() throws {
        let master = try RunningNode(role: .master, dataDirectory: temporaryDirectory(), name: "front")
        defer { master.stop() }
        let answer = try promote(master, force: true)
        XCTAssertEqual(answer.status, 409, "\(answer.body)")
        XCTAssertEqual(answer.body.objectValue?["error"]?.objectValue?["code"]?.stringValue, "not_a_slave")
        let malformed = try LocalAPIClient(dataDirectory: master.dataDirectory).send(
            method: "POST", path: "/v1/promote", body: .object(JSONObject([("force", .string("yes"))])))
        XCTAssertEqual(malformed.status, 400, "\(malformed.body)")
        let wrongMethod = try LocalAPIClient(dataDirectory: master.dataDirectory).send(method: "GET", path: "/v1/promote")
        XCTAssertEqual(wrongMethod.status, 405, "\(wrongMethod.body)")
    }

    func testAPromotedSlaveServesAsMasterOnTheSameSeatAndPersistsItsTerm() throws {
        let (directory, url) = try slaveOfAStoppedMaster()
        // The standby copy's master, as the store's members leave it on the slave.
        let db = try OrderDatabase(path: directory + "/" + NodeDefaults.databaseFile)
        try db.setMetadata(SlaveNode.standbyMasterKey, #"{"id":"old","key":"00","name":"front"}"#)
        db.close()

        let node = try RunningNode(role: .slave, dataDirectory: directory, name: "bar-2", masterURL: url)
        let answer = try promote(node)
        XCTAssertEqual(answer.status, 200, "\(answer.body)")
        let promoted = try PromoteAnswer(json: answer.body)
        XCTAssertEqual(promoted.term, 2)
        XCTAssertEqual(promoted.promised, ["bar-2"])
        XCTAssertFalse(promoted.forced)

        // The same process now answers as the master, on the same API socket, with the lock
        // still held and the orders it replicated.
        guard case .master(let m) = try node.status() else { return XCTFail("the promoted node is not a master") }
        XCTAssertEqual(m.store, "shop1")
        XCTAssertEqual(m.orders, 1)
        let config = NodeConfiguration(
            role: .master, dataDirectory: directory, store: nil, name: "x", serviceType: NodeDefaults.serviceType, port: 0,
            listenAddress: "127.0.0.1", masterURL: nil)
        XCTAssertThrowsError(try DataDirectory(claimingFor: config), "the data directory lock was let go")
        let again = try promote(node)
        XCTAssertEqual(again.body.objectValue?["error"]?.objectValue?["code"]?.stringValue, "not_a_slave")
        node.stop()

        let stored = try metadata(directory, ["node.role", "sync.term", "sync.vote", "store.id"])
        XCTAssertEqual(stored["node.role"], "master")
        XCTAssertEqual(stored["sync.term"], "2")
        XCTAssertEqual(stored["store.id"], "shop1")
        XCTAssertEqual(stored["sync.vote"]?.hasPrefix("2 "), true, "\(stored)")
        // Started again, the data directory is a master's.
        let restarted = try RunningNode(role: .master, dataDirectory: directory, name: "bar-2")
        guard case .master = try restarted.status() else { return XCTFail("not a master after a restart") }
        restarted.stop()
    }
}
