import Discovery
import Foundation
import JSON
import NodePolicy
import Noise
import OrderStore
import SecureLink
import SyncCore
import XCTest

@testable import OrderSyncNode

/// A device posing as a member of the store (`Docs/PROTOCOL.md` 7.15).
extension PromotionNodeTests {
    /// A device announcing the store with a member's id and term 999 at its own address, where
    /// the IK handshake cannot prove that member's key: the slave tries it, keeps nothing (term,
    /// trust), is live on its real master again within 2 s and does not try it again for a while.
    func testAMembersIdAnnouncingAHigherTermIsTriedButNothingIsKeptUnproven() throws {
        let (masterDir, aDir, bDir) = (temporaryDirectory(), temporaryDirectory(), temporaryDirectory())
        let bus = DiscoveryBus()
        // The master publishes but does not browse: its own step-down is not what this tests.
        let master = try RunningNode(
            role: .master, dataDirectory: masterDir, name: "front", discovery: PublishingOnly(bus.discovery()))
        guard case .master(let m) = try master.status() else { return XCTFail("no master") }
        let b = try master.pairedSlave(dataDirectory: bDir, name: "patio")
        try waitLive(b, "patio to sync")
        b.stop()
        let a = try master.pairedSlave(dataDirectory: aDir, name: "bar-2")
        try waitLive(a, "bar-2 to sync")
        // An order after `members`: once bar-2 holds it, its standby copy names patio.
        let order = JSONValue.object(JSONObject([("uuid", .string(UUID().uuidString.lowercased())), ("customerName", .string("Ann"))]))
        XCTAssertEqual(try LocalAPIClient(dataDirectory: masterDir).send(method: "POST", path: "/v1/orders", body: order).status, 201)
        _ = try waitForStatus(a, "bar-2 to hold the order") { status -> Bool? in
            guard case .slave(let s) = status, s.master.state == .live, s.orders == 1 else { return nil }
            return true
        }
        a.stop()
        let patio = NodeIdentity.nodeId(publicKey: try nodeKey(bDir))
        XCTAssertTrue(try Self.database(aDir) { try $0.pairedTerminals() }.contains { $0.nodeId == patio }, "patio is a member")
        let slave = try RunningNode(role: .slave, dataDirectory: aDir, name: "bar-2", discovery: bus.discovery())
        try waitLive(slave, port: m.port, "bar-2 to find its master")

        let standIn = try FakeSecureMaster(.init(code: nil, keys: [NoiseKeyPair.generate()]))
        defer { standIn.stop() }
        let rogue = bus.discovery()
        try rogue.start { _ in }
        let announcement = ServiceAnnouncement(
            name: "Rogue", type: NodeDefaults.serviceType, port: standIn.port,
            txt: [
                ("proto", "ordersync/1"), ("store", "shop1"), ("epoch", m.epoch), ("term", "999"), ("role", "master"),
                ("id", patio),
            ])
        let announced = Date()
        rogue.publish(announcement)
        try standIn.wait(for: "bar-2 to try the announced member") { $0.count >= 1 }
        try waitLive(slave, port: m.port, "bar-2 back on its real master")
        XCTAssertLessThan(Date().timeIntervalSince(announced), 2, "back on its master within 2 s")
        // The same announcement again: held back, the live link kept.
        let tries = standIn.seen.count
        rogue.publish(announcement)
        guard case .slave(let s) = try slave.status() else { return XCTFail("not a slave") }
        XCTAssertEqual(s.master.state, .live)
        XCTAssertEqual(standIn.seen.count, tries, "an unproven announcement is not tried again at once")
        XCTAssertTrue(standIn.seen.allSatisfy { $0.messages.isEmpty }, "nothing reached the stand-in")
        slave.stop()
        master.stop()
        XCTAssertEqual(try metadata(aDir, ["sync.term"])["sync.term"] ?? "1", "1", "the announced term is not kept")
        let trust = try XCTUnwrap(try MasterTrust.load(path: aDir + "/" + NodeDefaults.masterTrustFile))
        XCTAssertEqual(trust.master, NodeIdentity.nodeId(publicKey: try nodeKey(masterDir)), "the trust is the real master's")
    }
}

/// A node's discovery that publishes on a ``DiscoveryBus`` but never reports what it browses.
private final class PublishingOnly: ServiceDiscovery, @unchecked Sendable {
    private let inner: BusDiscovery

    init(_ inner: BusDiscovery) { self.inner = inner }

    func start(reporting report: @escaping @Sendable (DiscoveryEvent) -> Void) throws {
        try inner.start(reporting: report)
    }

    func publish(_ announcement: ServiceAnnouncement) { inner.publish(announcement) }
    func unpublish() { inner.unpublish() }
    func browse(type: String) {}
    func rebrowse(type: String) {}
    func stop() { inner.stop() }
}
