import Foundation
import Glibc
import JSON
import NodePolicy
import OrderStore
import OrderSyncNode
import SecureLink
import XCTest

/// A real master and slave on loopback: the slave pairs through the master's pairing window,
/// orders sync both ways over the secure link, and after a restart without a code the slave
/// comes back over IK and syncs again.
final class SecureSyncNodeTests: XCTestCase {
    private var directories: [String] = []

    override func tearDown() {
        for d in directories { try? FileManager.default.removeItem(atPath: d) }
    }

    private func temporaryDirectory() -> String {
        let d = NSTemporaryDirectory() + "ordersync-secure-" + UUID().uuidString
        directories.append(d)
        return d
    }

    private func wait<T>(_ what: String, timeout: TimeInterval = 10, _ condition: () throws -> T?) throws -> T {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let value = try condition() { return value }
            if Date() > deadline {
                XCTFail("timed out waiting for \(what)")
                throw CancellationError()
            }
            usleep(10_000)
        }
    }

    private func liveSlave(_ node: RunningNode) throws -> SlaveStatus {
        try wait("the slave to go live") {
            guard case .slave(let s) = try node.status(), s.master.state == .live else { return nil }
            return s
        }
    }

    /// Creates an order through `node`'s local API; returns its uuid.
    private func createOrder(on node: RunningNode, customer: String) throws -> String {
        let uuid = UUID().uuidString.lowercased()
        let order = JSONValue.object(JSONObject([("uuid", .string(uuid)), ("customerName", .string(customer))]))
        let answer = try LocalAPIClient(dataDirectory: node.dataDirectory).send(method: "POST", path: "/v1/orders", body: order)
        XCTAssertTrue((200..<300).contains(answer.status), "\(answer.status) \(answer.body)")
        return uuid
    }

    /// Waits until `node` holds order `uuid` for `customer` (synced, on a slave).
    private func waitForOrder(_ uuid: String, customer: String, on node: RunningNode, _ where: String) throws {
        _ = try wait("order \(customer) on the \(`where`)") { () -> Bool? in
            let answer = try LocalAPIClient(dataDirectory: node.dataDirectory).send(method: "GET", path: "/v1/orders/\(uuid)")
            guard answer.status == 200, let o = answer.body.objectValue, o["customerName"]?.stringValue == customer else { return nil }
            if let sync = o["sync"]?.stringValue, sync != "synced" { return nil }
            return true
        }
    }

    func testPairsThroughTheWindowSyncsBothWaysAndComesBackWithoutACode() throws {
        let master = try RunningNode(role: .master, dataDirectory: temporaryDirectory(), name: "front")
        defer { master.stop() }
        guard case .master(let m) = try master.status() else { return XCTFail("not a master") }
        let slaveDirectory = temporaryDirectory()

        var slave = try master.pairedSlave(dataDirectory: slaveDirectory, name: "bar-2")
        let first = try liveSlave(slave)
        XCTAssertEqual(first.pairing, .paired)
        XCTAssertEqual(first.masterId, m.nodeId)
        XCTAssertEqual(try MasterTrust.load(path: slaveDirectory + "/" + NodeDefaults.masterTrustFile)?.master, m.nodeId)
        let fromMaster = try createOrder(on: master, customer: "from the master")
        try waitForOrder(fromMaster, customer: "from the master", on: slave, "slave")
        let fromSlave = try createOrder(on: slave, customer: "from the slave")
        try waitForOrder(fromSlave, customer: "from the slave", on: master, "master")
        try waitForOrder(fromSlave, customer: "from the slave", on: slave, "slave, settled")
        slave.stop()
        // The slave is a standby: the master's members, and both operations in its journal.
        let copy = try OrderDatabase.openReadOnly(path: slaveDirectory + "/" + NodeDefaults.databaseFile)
        XCTAssertEqual(try copy.standbyMaster()?.id, m.nodeId)
        // The master is a member too, under its own row (Docs/PROTOCOL.md 7.20).
        XCTAssertEqual(try copy.memberTerminals().map(\.member.name), ["bar-2", "front"])
        XCTAssertEqual(try copy.journalEntries(after: 0, limit: 10).map(\.term), [1, 1])
        copy.close()

        // Restarted with no code: IK with the trusted key; the window is single use anyway.
        slave = try RunningNode(
            role: .slave, dataDirectory: slaveDirectory, name: "bar-2", masterURL: MasterURL(host: "127.0.0.1", port: master.port))
        defer { slave.stop() }
        let again = try liveSlave(slave)
        XCTAssertEqual(again.pairing, .paired)
        XCTAssertEqual(again.orders, 2)
        let later = try createOrder(on: master, customer: "after the restart")
        try waitForOrder(later, customer: "after the restart", on: slave, "slave")
        let laterFromSlave = try createOrder(on: slave, customer: "from the slave again")
        try waitForOrder(laterFromSlave, customer: "from the slave again", on: master, "master")
    }

    /// A snapshot part of 200 orders near the 16 KiB order limit is about 3 MB, over the 1 MiB
    /// message limit a node accepts from its peers: the master still seals it and the slave
    /// still accepts it on the secure link, so such a store syncs to a new slave.
    func testASnapshotOfOrdersNearTheSizeLimitReachesANewSlave() throws {
        let master = try RunningNode(role: .master, dataDirectory: temporaryDirectory(), name: "front")
        defer { master.stop() }
        let blob = String(repeating: "n", count: 15_000)
        var uuids: [String] = []
        for batch in 0..<7 {
            let orders = (0..<30).map { i -> JSONValue in
                let uuid = UUID().uuidString.lowercased()
                uuids.append(uuid)
                return .object(
                    JSONObject([
                        ("uuid", .string(uuid)), ("customerName", .string("big \(batch)-\(i)")), ("x-blob", .string(blob)),
                    ]))
            }
            let message = JSONValue.object(JSONObject([("operation", .int(0)), ("orders", .array(orders))]))
            let answer = try LocalAPIClient(dataDirectory: master.dataDirectory).send(
                method: "POST", path: "/v1/operations", body: message)
            XCTAssertTrue((200..<300).contains(answer.status), "\(answer.status) \(answer.body)")
        }
        let slave = try master.pairedSlave(dataDirectory: temporaryDirectory(), name: "big-reader")
        defer { slave.stop() }
        let live = try liveSlave(slave)
        XCTAssertEqual(live.orders, uuids.count)
        try waitForOrder(uuids[205], customer: "big 6-25", on: slave, "slave")
    }

    func testFollowsAKeyRotationAcrossARestartAndShowsARevocation() throws {
        let master = try RunningNode(role: .master, dataDirectory: temporaryDirectory(), name: "front")
        defer { master.stop() }
        guard case .master(let before) = try master.status() else { return XCTFail("not a master") }
        let slaveDirectory = temporaryDirectory()
        var slave = try master.pairedSlave(dataDirectory: slaveDirectory, name: "bar-2")
        _ = try liveSlave(slave)

        let api = LocalAPIClient(dataDirectory: master.dataDirectory)
        let rotated = try api.send(method: "POST", path: "/v1/key/rotate")
        XCTAssertEqual(rotated.status, 200, "\(rotated.body)")
        guard case .master(let after) = try master.status() else { return XCTFail("not a master") }
        XCTAssertNotEqual(after.nodeId, before.nodeId)
        _ = try wait("the slave to take the new key") { () -> Bool? in
            guard case .slave(let s) = try slave.status(), s.masterId == after.nodeId else { return nil }
            return true
        }
        let trust = try XCTUnwrap(try MasterTrust.load(path: slaveDirectory + "/" + NodeDefaults.masterTrustFile))
        XCTAssertEqual(trust.master, after.nodeId)
        XCTAssertEqual(trust.previousKeys.map(\.master), [before.nodeId])
        slave.stop()

        // Back with no code: IK straight to the new key.
        slave = try RunningNode(
            role: .slave, dataDirectory: slaveDirectory, name: "bar-2", masterURL: MasterURL(host: "127.0.0.1", port: master.port))
        defer { slave.stop() }
        _ = try liveSlave(slave)
        let order = try createOrder(on: master, customer: "after the rotation")
        try waitForOrder(order, customer: "after the rotation", on: slave, "slave")

        let revoked = try api.send(method: "POST", path: "/v1/terminals/bar-2/revoke")
        XCTAssertEqual(revoked.status, 200, "\(revoked.body)")
        let refused = try wait("the slave to see it is refused") { () -> SlaveStatus? in
            guard case .slave(let s) = try slave.status(), s.pairing == .refused else { return nil }
            return s
        }
        XCTAssertNotEqual(refused.master.state, .live)
        XCTAssertEqual(refused.masterId, after.nodeId, "the trust stays; only pairing again helps")
    }
}
