import Discovery
import Foundation
import JSON
import NodePolicy
import OrderStore
import SyncCore
import Synchronization
import XCTest

@testable import OrderSyncNode

/// Two forced promotions cut off from each other (Docs/PROTOCOL.md 7.16): each bids a term its
/// member number owns, so they never share one; when the LAN heals, the lower master steps down
/// and its acknowledged writes reach the higher one, once.
extension PromotionNodeTests {
    private func order(_ uuid: String, _ name: String) -> JSONValue {
        .object(JSONObject([("uuid", .string(uuid)), ("customerName", .string(name))]))
    }

    func testTwoForcedPromotionsCutOffFromEachOtherGetDifferentTermsAndTheLowerStepsDownLosingNothing() throws {
        let (masterDir, aDir, bDir) = (temporaryDirectory(), temporaryDirectory(), temporaryDirectory())
        let master = try RunningNode(role: .master, dataDirectory: masterDir, name: "front")
        XCTAssertEqual(
            try LocalAPIClient(dataDirectory: masterDir).send(
                method: "POST", path: "/v1/orders", body: order(UUID().uuidString.lowercased(), "Ann")
            ).status, 201)
        let a = try master.pairedSlave(dataDirectory: aDir, name: "bar-2")
        let b = try master.pairedSlave(dataDirectory: bDir, name: "patio")
        for node in [a, b] {
            _ = try waitForStatus(node, "the standby copy with its member number") { status -> Bool? in
                guard case .slave(let s) = status, s.master.state == .live, s.orders == 1 else { return nil }
                return true
            }
        }
        a.stop()
        b.stop()
        master.stop()
        let numbers = try [aDir, bDir].map { dir in
            try Self.database(dir) { db in try db.memberNumber(nodeId: NodeIdentity.nodeId(publicKey: try nodeKey(dir))) }
        }
        XCTAssertEqual(numbers, [2, 3], "the master is member 1; its terminals 2 and 3 in pairing order")

        // The master is gone; each till is alone on its own LAN and its operator forces it.
        let (busA, busB) = (DiscoveryBus(), DiscoveryBus())
        let isolatedA = try RunningNode(role: .slave, dataDirectory: aDir, name: "bar-2", discovery: busA.discovery())
        let isolatedB = try RunningNode(role: .slave, dataDirectory: bDir, name: "patio", discovery: busB.discovery())
        // Both operators at once (each forced candidacy waits out the election's deadline).
        // Behind an NSLock (a pthread mutex, which ThreadSanitizer sees): `Mutex` locks with a
        // futex it does not, and two writers through one reported a race that was none.
        final class Answers: @unchecked Sendable {
            let lock = NSLock()
            var byIndex: [Int: (status: Int, body: JSONValue)] = [:]
        }
        let answers = Answers()
        let directories = [aDir, bDir]
        let body = PromoteRequest(force: true).jsonValue
        DispatchQueue.concurrentPerform(iterations: 2) { i in
            let answer = try? LocalAPIClient(dataDirectory: directories[i]).send(method: "POST", path: "/v1/promote", body: body)
            answers.lock.withLock { answers.byIndex[i] = answer.map { (Int($0.status), $0.body) } }
        }
        let reports = try (0..<2).map { i -> PromotionReport in
            let answer = try XCTUnwrap(answers.lock.withLock { answers.byIndex[i] }, "no answer from \(directories[i])")
            XCTAssertEqual(answer.status, 200, "\(answer.body)")
            return try PromotionReport(json: answer.body)
        }
        XCTAssertEqual(reports.map(\.term), [2, 3], "each bid the smallest term above 1 its number owns")
        XCTAssertEqual(reports.map(\.forced), [true, true])
        XCTAssertNotEqual(reports[0].term, reports[1].term, "two forced promotions never share a term")

        // Each master acknowledges a write in its own term (committed on its disk).
        let (onA, onB) = (UUID().uuidString.lowercased(), UUID().uuidString.lowercased())
        XCTAssertEqual(try LocalAPIClient(dataDirectory: aDir).send(method: "POST", path: "/v1/orders", body: order(onA, "Al")).status, 201)
        XCTAssertEqual(
            try LocalAPIClient(dataDirectory: bDir).send(method: "POST", path: "/v1/orders", body: order(onB, "Bea")).status, 201)
        isolatedA.stop()
        isolatedB.stop()

        // The LAN heals: both start again as masters on one LAN.
        let bus = DiscoveryBus()
        let higher = try RunningNode(role: .master, dataDirectory: bDir, name: "patio", discovery: bus.discovery())
        guard case .master(let m) = try higher.status() else { return XCTFail("patio is not a master") }
        let lower = try RunningNode(role: .master, dataDirectory: aDir, name: "bar-2", discovery: bus.discovery())
        try waitLive(lower, port: m.port, "bar-2 (term 2) to step down and follow patio (term 3)")
        for node in [higher, lower] {
            _ = try waitForStatus(node, "both acknowledged orders on both nodes") { status -> Bool? in
                switch status {
                case .master(let s): return s.orders == 3 ? true : nil
                case .slave(let s): return s.orders == 3 && s.outbox == 0 ? true : nil
                }
            }
        }
        guard case .master = try higher.status(), case .slave = try lower.status() else {
            return XCTFail("exactly one master must remain")
        }
        higher.stop()
        lower.stop()
        let applied = try Self.database(bDir) { db in
            (
                try db.journal(since: 0, orderUUID: onA, limit: 10).map(\.term),
                try db.journal(since: 0, orderUUID: onB, limit: 10).map(\.term)
            )
        }
        XCTAssertEqual(applied.0, [3], "bar-2's order, acknowledged in term 2, is re-queued and applied once in term 3")
        XCTAssertEqual(applied.1, [3])
        let stepped = try metadata(aDir, ["node.role", "sync.term"])
        XCTAssertEqual(stepped["node.role"], "slave")
        XCTAssertEqual(stepped["sync.term"], "3")
    }

    /// A terminal runs as `ordersync slave --pair CODE` (the code stays in its configuration),
    /// is promoted, and later steps down: its slave role follows the member by key; it does not
    /// pair anew with the old code (refused, the node would stop).
    func testAPromotedNodeStartedWithItsPairingCodeStepsDownWithoutPairingAnew() throws {
        let (masterDir, aDir, bDir) = (temporaryDirectory(), temporaryDirectory(), temporaryDirectory())
        let master = try RunningNode(role: .master, dataDirectory: masterDir, name: "front")
        let code = try master.openPairingWindow(name: "bar-2")
        let withCode: (inout NodeConfiguration) -> Void = { $0.pairingCode = code }
        let url = MasterURL(host: "127.0.0.1", port: master.port)
        let a = try RunningNode(role: .slave, dataDirectory: aDir, name: "bar-2", masterURL: url, configure: withCode)
        let b = try master.pairedSlave(dataDirectory: bDir, name: "patio")
        for node in [a, b] { try waitLive(node, "the standby copy") }
        for node in [a, b, master] { node.stop() }

        // bar-2, still started with its code, is forced master of term 2 on the store's LAN;
        // patio, cut off, of term 3; then patio comes to the LAN.
        let bus = DiscoveryBus()
        let lower = try RunningNode(role: .slave, dataDirectory: aDir, name: "bar-2", discovery: bus.discovery(), configure: withCode)
        let isolated = try RunningNode(role: .slave, dataDirectory: bDir, name: "patio", discovery: DiscoveryBus().discovery())
        XCTAssertEqual(try PromotionReport(json: try promote(lower, force: true).body).term, 2)
        XCTAssertEqual(try PromotionReport(json: try promote(isolated, force: true).body).term, 3)
        isolated.stop()
        let higher = try RunningNode(role: .master, dataDirectory: bDir, name: "patio", discovery: bus.discovery())
        guard case .master(let m) = try higher.status() else { return XCTFail("patio is not a master") }
        try waitLive(lower, port: m.port, "bar-2 to step down and follow patio without pairing anew")
        for node in [lower, higher] { node.stop() }
    }
}
