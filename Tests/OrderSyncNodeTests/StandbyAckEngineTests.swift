import Foundation
import JSON
import OrderStore
import SyncCore
import WireTestSupport
import XCTest

@testable import OrderSyncNode

/// The master and slave engines on SQLite: a write that waits for standbys is broadcast
/// `ackNow` to OrderSync slaves only, a slave acks it at once with what its copy `held`, and
/// the master keeps that per standby.
final class StandbyAckEngineTests: XCTestCase {
    var dir: String!

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "ordersync-standby-ack-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: dir)
    }

    private func create(_ name: String) -> OperationMessage {
        OperationMessage(
            operation: .create,
            orders: [
                .object(
                    JSONObject([
                        ("uuid", .string(UUID().uuidString)), ("customerName", .string(name)),
                        ("created", .string("2016-01-12T21:35:16+0800")),
                    ]))
            ], opId: UUID().uuidString)
    }

    /// The messages `actions` send to `peer`, in order.
    private func sent(to peer: Int, _ actions: [MasterEngine.Action]) -> [[UInt8]] {
        actions.compactMap { a in
            switch a {
            case .send(peer, let bytes): return bytes
            case .broadcast(let bytes, let peers) where peers.contains(peer): return bytes
            default: return nil
            }
        }
    }

    func testAWriteThatWaitsIsAckedAtOnceWithWhatTheStandbyHolds() throws {
        let master = try MasterEngine(store: SQLiteMasterStore(db: OrderDatabase(path: dir + "/m.sqlite")), storeId: "s", epoch: "e")
        let slave = try SlaveEngine(
            store: SQLiteSlaveStore(db: OrderDatabase(path: dir + "/s.sqlite")), terminalId: "t", terminalName: "till",
            configuredStore: "s")
        _ = master.peerConnected(1, address: "10.0.0.2:5000", terminal: AuthenticatedTerminal(nodeId: "t", name: "till"))
        _ = master.peerConnected(2, address: "10.0.0.3:5000", terminal: nil)
        guard case .send(let hello)? = slave.linkOpened().first else { return XCTFail("no hello") }
        var toSlave = sent(to: 1, master.received(hello, from: 1, now: 1_000))
        while !toSlave.isEmpty {
            var toMaster: [[UInt8]] = []
            for m in toSlave {
                for case .send(let b) in slave.received(m, now: 1_000) { toMaster.append(b) }
            }
            toSlave = toMaster.flatMap { sent(to: 1, master.received($0, from: 1, now: 1_000)) }
        }
        XCTAssertEqual(slave.link, .live)
        XCTAssertEqual(master.standbys.map(\.terminalId), ["t"], "a StorePOS app is no standby")
        XCTAssertEqual(master.standbys.first?.held, 0, "the ack after ready says what the copy holds")

        // A write that waits: the slave's broadcast is marked, the app's is not.
        let (outcome, actions) = master.localWrite(create("A"), origin: "front", now: 2_000, ackNow: true)
        XCTAssertEqual(outcome.seq, 1)
        let toTill = try XCTUnwrap(sent(to: 1, actions).last)
        let toApp = try XCTUnwrap(sent(to: 2, actions).last)
        XCTAssertTrue(AckNow.isMarked(toTill), toTill.text)
        XCTAssertFalse(AckNow.isMarked(toApp), toApp.text)
        XCTAssertEqual(toApp, outcome.broadcast, "the app's bytes are the journal's")
        // The slave acks at once, with held = its replica's sequence.
        let answer = slave.received(toTill, now: 2_000)
        let acks = answer.compactMap { a -> [UInt8]? in if case .send(let b) = a { return b } else { return nil } }
        XCTAssertEqual(acks, [ClientMessage.encodeAck(seq: 1, outbox: 0, held: 1)])
        _ = master.received(try XCTUnwrap(acks.first), from: 1, now: 2_000)
        XCTAssertEqual(master.standbys.first?.held, 1)
        // The delayed ack it had asked for still comes (the node's timer), saying the same.
        XCTAssertEqual(slave.ackDue(), [.send(ClientMessage.encodeAck(seq: 1, outbox: 0, held: 1))])

        // A write that does not wait: the slave acks later (the node's ack delay).
        let (_, plain) = master.localWrite(create("B"), origin: "front", now: 3_000)
        let unmarked = try XCTUnwrap(sent(to: 1, plain).last)
        XCTAssertFalse(AckNow.isMarked(unmarked))
        let later = slave.received(unmarked, now: 3_000)
        XCTAssertFalse(later.contains { if case .send = $0 { return true } else { return false } }, "\(later)")
        XCTAssertTrue(later.contains(.scheduleAck))
        XCTAssertEqual(slave.ackDue(), [.send(ClientMessage.encodeAck(seq: 2, outbox: 0, held: 2))])

        // An ack cannot claim more than the master has.
        _ = master.received(ClientMessage.encodeAck(seq: 2, outbox: 0, held: 99), from: 1, now: 3_000)
        XCTAssertEqual(master.standbys.first?.held, 2)
    }

    func testTheSlaveHoldsWhatItAppliedEvenWhileItsOutboxCapsItsAck() throws {
        let slave = try SlaveEngine(
            store: SQLiteSlaveStore(db: OrderDatabase(path: dir + "/s.sqlite")), terminalId: "t", terminalName: "till",
            configuredStore: "s")
        _ = slave.linkOpened()
        _ = slave.received(#"{"type":"ready","seq":0,"epoch":"e","store":"s"}"#, now: 1_000)
        // Offline-style local write: its base (0) caps `seq`, not `held`.
        _ = slave.localWrite(create("local"), opId: "op-l", now: 1_000)
        let broadcast = ServerMessage.applied(
            operation: .create, orders: [Order(uuid: UUID().uuidString, customerName: "M", created: .init(epochMillis: 0))], seq: 1,
            opId: "op-m", origin: "front", snapshot: nil
        ).encodedBytes()
        let acks = slave.received(AckNow.marking(broadcast), now: 1_000).compactMap { a -> [UInt8]? in
            if case .send(let b) = a, b.text.contains("\"ack\"") { return b } else { return nil }
        }
        XCTAssertEqual(acks, [ClientMessage.encodeAck(seq: 0, outbox: 1, held: 1)])
    }
}
