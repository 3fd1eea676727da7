import Foundation
import JSON
import NodePolicy
import Noise
import OrderSyncNode
import SecureLink
import SyncCore
import XCTest

/// A running master whose local API writes wait for standbys (`--sync-replicas`): answered
/// `"replicated": true` once a standby's ack holds them, `false` (counted, and kept so for a
/// retry) when none does within `--sync-timeout`.
final class StandbyReplicationNodeTests: XCTestCase {
    private var directories: [String] = []

    override func tearDown() {
        for d in directories { try? FileManager.default.removeItem(atPath: d) }
    }

    private func temporaryDirectory() -> String {
        let d = NSTemporaryDirectory() + "ordersync-replicas-" + UUID().uuidString
        directories.append(d)
        return d
    }

    private func operation(_ opId: String) -> JSONValue {
        let order = JSONObject([("uuid", .string(UUID().uuidString)), ("customerName", .string(opId))])
        return .object(JSONObject([("operation", .int(0)), ("orders", .array([.object(order)])), ("opId", .string(opId))]))
    }

    /// A write through the master's local API, sent from another thread while the test drives
    /// the stand-in terminal; `wait()` returns its answer.
    private final class PendingWrite: @unchecked Sendable {
        private let done = DispatchSemaphore(value: 0)
        private var answer: Result<LocalAPIResponse, any Error>?

        init(_ dataDirectory: String, _ body: JSONValue) {
            Thread {
                self.answer = Result {
                    try LocalAPIClient(dataDirectory: dataDirectory).send(method: "POST", path: "/v1/operations", body: body)
                }
                self.done.signal()
            }.start()
        }

        func wait() throws -> LocalAPIResponse {
            XCTAssertEqual(done.wait(timeout: .now() + 20), .success, "the write was never answered")
            return try XCTUnwrap(answer).get()
        }
    }

    /// A paired terminal that says hello and gets its snapshot, then acks only when told to.
    private func standIn(_ master: RunningNode) throws -> SecureTestTerminal {
        let code = try master.openPairingWindow(name: "till-9")
        let payload = JSONValue.object(JSONObject([("name", .string("till-9")), ("terminal", .string("t-9"))])).serializedBytes()
        let t = try SecureTestTerminal(port: master.port, subprotocol: SecureLinkSubprotocol.pairing) {
            try SecureLink.pairingInitiator(code: code, localStatic: NoiseKeyPair.generate(), payload: payload)
        }
        XCTAssertTrue(t.wait { !$0.controls.isEmpty }, "not paired: \(String(describing: t.ending))")
        try t.send(HelloMessage(terminalId: "t-9", terminalName: "till-9", store: "shop1", lastSeq: 0, epoch: nil).encoded())
        XCTAssertTrue(t.wait { $0.snapshot.ready })
        return t
    }

    /// The broadcast of `opId` the stand-in received, as text.
    private func broadcast(of opId: String, in t: SecureTestTerminal) -> String? {
        t.messages.first { $0.contains("\"opId\":\"\(opId)\"") && $0.contains("\"orders\"") }
    }

    func testAWriteIsAnsweredOnceAStandbyHoldsItOrUnreplicatedAfterTheTimeout() throws {
        let master = try RunningNode(
            role: .master, dataDirectory: temporaryDirectory(), name: "front", configure: { $0.syncTimeout = .milliseconds(700) })
        defer { master.stop() }
        let api = LocalAPIClient(dataDirectory: master.dataDirectory)
        // No standby: answered at once, unreplicated, and counted.
        let alone = try api.send(method: "POST", path: "/v1/operations", body: operation("op-alone"))
        XCTAssertEqual(alone.status, 200, "\(alone.body)")
        XCTAssertEqual(alone.body.objectValue?["replicated"], .bool(false))

        let till = try standIn(master)
        defer { till.close() }
        guard case .master(let before) = try master.status() else { return XCTFail("not a master") }
        XCTAssertNil(before.peers.first?.held, "the stand-in has not acked")

        // The stand-in never acks: answered after the timeout, unreplicated.
        let silent = PendingWrite(master.dataDirectory, operation("op-silent"))
        XCTAssertTrue(till.wait { self.broadcast(of: "op-silent", in: $0) != nil })
        let marked = try XCTUnwrap(broadcast(of: "op-silent", in: till))
        XCTAssertTrue(marked.hasSuffix(#","ackNow":true}"#), marked)
        let unreplicated = try silent.wait()
        XCTAssertEqual(unreplicated.status, 200)
        XCTAssertEqual(unreplicated.body.objectValue?["replicated"], .bool(false), "\(unreplicated.body)")
        let seq = try XCTUnwrap(unreplicated.body.objectValue?["seq"]?.intValue)
        // A retry of the operation id gets the very answer.
        let again = try api.send(method: "POST", path: "/v1/operations", body: operation("op-silent"))
        XCTAssertEqual(again.body.serializedBytes(), unreplicated.body.serializedBytes())

        // Now it acks what it holds: the next write is answered replicated, well before the timeout.
        try till.send(String(decoding: ClientMessage.encodeAck(seq: seq, outbox: 0, held: seq), as: UTF8.self))
        let held = PendingWrite(master.dataDirectory, operation("op-held"))
        XCTAssertTrue(till.wait { self.broadcast(of: "op-held", in: $0) != nil })
        try till.send(String(decoding: ClientMessage.encodeAck(seq: seq + 1, outbox: 0, held: seq + 1), as: UTF8.self))
        _ = till.wait(timeout: .milliseconds(50)) { _ in false }
        let replicated = try held.wait()
        XCTAssertEqual(replicated.body.objectValue?["replicated"], .bool(true), "\(replicated.body)")
        XCTAssertEqual(replicated.body.objectValue?["seq"]?.intValue, seq + 1)
        let kept = try api.send(method: "POST", path: "/v1/operations", body: operation("op-held"))
        XCTAssertEqual(kept.body.serializedBytes(), replicated.body.serializedBytes())

        // Counted: the write with no standby and the one nobody held.
        let metrics = try api.metrics()
        XCTAssertTrue(metrics.contains("ordersync_unreplicated_writes_total 2"), metrics)
        XCTAssertTrue(metrics.contains(#"ordersync_standby_lag_operations{terminal=""#), metrics)
        XCTAssertTrue(metrics.contains("ordersync_term 1"), metrics)
        guard case .master(let after) = try master.status() else { return XCTFail("not a master") }
        XCTAssertEqual(after.peers.first?.held, seq + 1)
        XCTAssertEqual(after.peers.first?.standbyLag, 0)
        XCTAssertEqual(after.syncReplicas, 1)
        XCTAssertEqual(after.term, 1)
        XCTAssertEqual(after.voters, MasterStatus.Voters(names: ["front", "till-9"]))
    }

    func testARealSlaveHoldsTheMastersWritesAndTheOffSwitchLeavesTheAnswerAsItWas() throws {
        let master = try RunningNode(role: .master, dataDirectory: temporaryDirectory(), name: "front")
        defer { master.stop() }
        let slave = try master.pairedSlave(dataDirectory: temporaryDirectory(), name: "till")
        defer { slave.stop() }
        try waitUntil("the slave is live") {
            guard case .slave(let s) = try slave.status() else { return false }
            return s.master.state == .live
        }
        let api = LocalAPIClient(dataDirectory: master.dataDirectory)
        for i in 0..<3 {
            let answer = try api.send(method: "POST", path: "/v1/operations", body: operation("op-\(i)"))
            XCTAssertEqual(answer.body.objectValue?["replicated"], .bool(true), "\(answer.body)")
        }
        // Answered once the slave held it: its copy has it already.
        guard case .slave(let s) = try slave.status() else { return XCTFail("not a slave") }
        XCTAssertEqual(s.held, 3)
        XCTAssertEqual(s.term, 1)
        guard case .master(let m) = try master.status() else { return XCTFail("not a master") }
        XCTAssertEqual(s.following?.id, m.nodeId)
        XCTAssertTrue(try api.metrics().contains("ordersync_unreplicated_writes_total 0"))

        let off = try RunningNode(
            role: .master, dataDirectory: temporaryDirectory(), name: "back", configure: { $0.syncReplicas = 0 })
        defer { off.stop() }
        let plain = try LocalAPIClient(dataDirectory: off.dataDirectory).send(
            method: "POST", path: "/v1/operations", body: operation("op-off"))
        XCTAssertEqual(plain.status, 200)
        XCTAssertNil(plain.body.objectValue?["replicated"], "\(plain.body)")
    }
}
