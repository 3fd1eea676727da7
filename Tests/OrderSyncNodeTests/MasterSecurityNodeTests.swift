import Foundation
import JSON
import NodePolicy
import Noise
import OrderSyncNode
import SecureLink
import SyncCore
import XCTest

/// A master on loopback against terminals driving the secure link over real WebSocket
/// connections: pairing, IK, revocation, key rotation, and what is refused.
final class MasterSecurityNodeTests: XCTestCase {
    private var directories: [String] = []

    override func tearDown() {
        for d in directories { try? FileManager.default.removeItem(atPath: d) }
    }

    private func startMaster(orders: Int = 0, configure: @escaping (inout NodeConfiguration) -> Void = { _ in }) throws -> RunningNode {
        let d = NSTemporaryDirectory() + "ordersync-secure-" + UUID().uuidString
        directories.append(d)
        let master = try RunningNode(role: .master, dataDirectory: d, name: "front", configure: configure)
        for i in 0..<orders {
            let order = JSONValue.object(JSONObject([("uuid", .string(UUID().uuidString)), ("customerName", .string("c\(i)"))]))
            XCTAssertEqual(try api(master).send(method: "POST", path: "/v1/orders", body: order).status, 201)
        }
        return master
    }

    private func api(_ node: RunningNode) -> LocalAPIClient { LocalAPIClient(dataDirectory: node.dataDirectory) }

    private func openWindow(_ master: RunningNode, name: String? = nil) throws -> PairingCode {
        var body = JSONObject()
        if let name { body["name"] = .string(name) }
        let answer = try api(master).send(method: "POST", path: "/v1/pairing", body: .object(body))
        XCTAssertEqual(answer.status, 201, "\(answer.body)")
        XCTAssertEqual(answer.body.objectValue?["store"]?.stringValue, "shop1")
        return try PairingCode(parsing: XCTUnwrap(answer.body.objectValue?["code"]?.stringValue))
    }

    private func pairingStatus(_ master: RunningNode) throws -> PairingWindowStatus {
        guard case .master(let m) = try master.status() else { throw CancellationError() }
        return m.pairing
    }

    private func pair(_ master: RunningNode, code: PairingCode, keys: NoiseKeyPair, name: String = "till") throws -> SecureTestTerminal {
        let payload = JSONValue.object(JSONObject([("name", .string(name)), ("terminal", .string("t-\(name)"))])).serializedBytes()
        return try SecureTestTerminal(port: master.port, subprotocol: SecureLinkSubprotocol.pairing) {
            try SecureLink.pairingInitiator(code: code, localStatic: keys, payload: payload)
        }
    }

    private func connectKnown(_ master: RunningNode, masterKey: [UInt8], keys: NoiseKeyPair) throws -> SecureTestTerminal {
        try SecureTestTerminal(port: master.port, subprotocol: SecureLinkSubprotocol.known) {
            try SecureLink.knownInitiator(masterKey: masterKey, localStatic: keys)
        }
    }

    private func hello(_ t: SecureTestTerminal) throws {
        try t.send(
            HelloMessage(terminalId: "forged-id", terminalName: "front (local API)", store: "shop1", lastSeq: 0, epoch: nil).encoded())
    }

    func testPairingThenIKReadsTheSnapshotAndRevokingClosesTheLink() throws {
        let master = try startMaster(orders: 3)
        defer { master.stop() }
        let keys = NoiseKeyPair.generate()
        let code = try openWindow(master, name: "till-9")

        let pairing = try pair(master, code: code, keys: keys)
        XCTAssertTrue(pairing.wait { !$0.controls.isEmpty }, "no paired message: \(String(describing: pairing.ending))")
        let paired = try XCTUnwrap(pairing.controls.first)
        XCTAssertEqual(paired["type"]?.stringValue, "paired")
        XCTAssertEqual(paired["name"]?.stringValue, "till-9", "the operator's name wins over the terminal's")
        let nodeId = try XCTUnwrap(paired["terminal"]?.stringValue)
        XCTAssertEqual(nodeId, NodeIdentity.nodeId(publicKey: keys.publicKey))
        let masterKey = try XCTUnwrap(pairing.masterKey)
        XCTAssertEqual(pairing.masterPayload?["store"]?.stringValue, "shop1")
        // The same link goes on as a known terminal.
        try hello(pairing)
        XCTAssertTrue(pairing.wait { $0.snapshot.ready })
        XCTAssertEqual(pairing.snapshot.orders, 3)
        pairing.close()
        XCTAssertEqual(try pairingStatus(master).state, .used)

        // Every later connection: IK with the key the master paired with.
        let known = try connectKnown(master, masterKey: masterKey, keys: keys)
        XCTAssertTrue(known.wait { $0.masterKey != nil })
        try hello(known)
        XCTAssertTrue(known.wait { $0.snapshot.ready })
        XCTAssertEqual(known.snapshot.orders, 3)
        // A write on the link is journalled under the paired terminal, not the hello's name.
        let order = JSONValue.object(JSONObject([("uuid", .string(UUID().uuidString)), ("customerName", .string("via link"))]))
        try known.send(OperationMessage(operation: .create, orders: [order], opId: "op-secure-1").encoded())
        XCTAssertTrue(known.wait { $0.messages.contains { $0.contains("\"result\"") } })
        let journal = try api(master).send(method: "GET", path: "/v1/journal").body.objectValue?["entries"]?.arrayValue ?? []
        let origin = journal.last?.objectValue?["origin"]?.stringValue ?? ""
        XCTAssertTrue(origin.hasPrefix("till-9 [\(nodeId.prefix(9))]@127.0.0.1:"), origin)

        let listed = try api(master).send(method: "GET", path: "/v1/terminals").body.objectValue?["terminals"]?.arrayValue ?? []
        XCTAssertEqual(listed.count, 1)
        XCTAssertEqual(listed.first?.objectValue?["connected"], .bool(true))
        XCTAssertEqual(listed.first?.objectValue?["name"]?.stringValue, "till-9")

        // Revoked: the open link closes at once, and the key is refused afterwards.
        let revokedAt = Date()
        let revoke = try api(master).send(method: "POST", path: "/v1/terminals/till-9/revoke")
        XCTAssertEqual(revoke.status, 200, "\(revoke.body)")
        let end = known.waitForEnd()
        XCTAssertEqual(end.code, 1008)
        XCTAssertEqual(end.reason, "revoked")
        XCTAssertLessThan(Date().timeIntervalSince(revokedAt), 1)
        let refused = try connectKnown(master, masterKey: masterKey, keys: keys)
        let refusal = refused.waitForEnd()
        XCTAssertEqual(refusal.code, 1008)
        XCTAssertEqual(refusal.reason, "unknown terminal")
        XCTAssertEqual(refused.masterKey, masterKey, "the refusal comes in the answer that proves the master's key")
        XCTAssertEqual(refused.masterPayload?["refused"]?.stringValue, "unknown terminal")
        XCTAssertEqual(refused.snapshot.orders, 0)
        XCTAssertEqual(try api(master).send(method: "POST", path: "/v1/terminals/till-9/revoke").status, 404)
    }

    func testSeveralCodesOpenAtOnceEachPairsOnceAndOneCanBeCancelled() throws {
        let master = try startMaster(orders: 1)
        defer { master.stop() }
        let codes = try ["till-1", "till-2", "till-3"].map { try openWindow(master, name: $0) }
        let listed = try api(master).send(method: "GET", path: "/v1/pairing").body.objectValue?["codes"]?.arrayValue ?? []
        XCTAssertEqual(listed.compactMap { $0.objectValue?["code"]?.stringValue }, codes.map(\.description))
        XCTAssertEqual(try pairingStatus(master).openCodes, 3)
        let cancelled = try api(master).send(method: "DELETE", path: "/v1/pairing/till-2")
        XCTAssertEqual(cancelled.status, 200, "\(cancelled.body)")
        XCTAssertEqual(try api(master).send(method: "DELETE", path: "/v1/pairing/till-2").status, 404)
        // The last code first, then the first; the cancelled one pairs nothing.
        for (code, name) in [(codes[2], "till-3"), (codes[0], "till-1")] {
            let t = try pair(master, code: code, keys: .generate())
            XCTAssertTrue(t.wait { !$0.controls.isEmpty }, "no paired message: \(String(describing: t.ending))")
            XCTAssertEqual(t.controls.first?["name"]?.stringValue, name)
            t.close()
        }
        let dead = try pair(master, code: codes[1], keys: .generate())
        XCTAssertEqual(dead.waitForEnd().reason, "pairing failed")
        let reused = try pair(master, code: codes[2], keys: .generate())
        XCTAssertEqual(reused.waitForEnd().reason, "pairing failed", "single use")
        XCTAssertEqual(try pairingStatus(master).state, .used)
    }

    func testFiveWrongCodesLockOutTheirAddressOnlyAndUnknownPeersReadNothing() throws {
        let master = try startMaster(orders: 2)
        defer { master.stop() }
        let code = try openWindow(master)
        let wrong = PairingCode.generate()
        for _ in 0..<5 {
            let t = try pair(master, code: wrong, keys: .generate())
            let end = t.waitForEnd()
            XCTAssertEqual(end.code, 1008)
            XCTAssertEqual(end.reason, "pairing failed")
        }
        let status = try pairingStatus(master)
        XCTAssertEqual(status.state, .open, "wrong codes never close a code")
        XCTAssertEqual(status.lockedOutAddresses, 1)
        let late = try pair(master, code: code, keys: .generate())
        XCTAssertEqual(late.waitForEnd().reason, "pairing failed", "the locked-out address is refused as for a wrong code")
        XCTAssertTrue(late.controls.isEmpty)
        XCTAssertNotNil(late.masterKey, "the same steps as any try: the master's second message came")

        // A key the master never paired with: refused in the master's handshake answer.
        let masterKey = Array(try XCTUnwrap(Data(base64Encoded: try masterPublicKey(master))))
        let stranger = try connectKnown(master, masterKey: masterKey, keys: .generate())
        let end = stranger.waitForEnd()
        XCTAssertEqual(end.code, 1008)
        XCTAssertEqual(end.reason, "unknown terminal")
        XCTAssertEqual(stranger.masterPayload?["refused"]?.stringValue, "unknown terminal")
        XCTAssertEqual(stranger.snapshot.orders, 0)

        // The cleartext protocol of earlier versions, and StorePOS without --insecure-storepos.
        for subprotocol in [orderSyncSubprotocol, nil] {
            let plain = try SecureTestTerminal(port: master.port, subprotocol: subprotocol)
            let end = plain.waitForEnd()
            XCTAssertEqual(end.code, 1008, "\(subprotocol ?? "StorePOS")")
            XCTAssertTrue(plain.messages.isEmpty, "nothing is sent to it")
        }
        XCTAssertEqual(try api(master).send(method: "GET", path: "/v1/orders").body.objectValue?["total"], .int(2))
    }

    /// A slave that says it reads batches (`features`) gets what one batch of the master's work
    /// sends it in one transport message: here its `result` and its own broadcast. One that
    /// does not say so (an older slave, or Python's peer) gets a transport message for each.
    func testOnlyASlaveThatSaysItReadsBatchesGetsSeveralMessagesInOneTransportMessage() throws {
        let master = try startMaster(orders: 1)
        defer { master.stop() }
        var links: [SecureTestTerminal] = []
        for (index, name) in ["batching", "older"].enumerated() {
            let keys = NoiseKeyPair.generate()
            let pairing = try pair(master, code: try openWindow(master, name: name), keys: keys, name: name)
            XCTAssertTrue(pairing.wait { !$0.controls.isEmpty })
            let masterKey = try XCTUnwrap(pairing.masterKey)
            pairing.close()
            let known = try connectKnown(master, masterKey: masterKey, keys: keys)
            XCTAssertTrue(known.wait { $0.masterKey != nil })
            if index == 0 { try known.sendControl(SecureLinkFeatures.readsBatches) }
            try hello(known)
            XCTAssertTrue(known.wait { $0.snapshot.ready })
            links.append(known)
        }
        for (index, link) in links.enumerated() {
            let opId = "op-batch-\(index)"
            let order = JSONValue.object(JSONObject([("uuid", .string(UUID().uuidString)), ("customerName", .string("c"))]))
            try link.send(OperationMessage(operation: .create, orders: [order], opId: opId).encoded())
            let mine = { (t: SecureTestTerminal) in t.messages.indices.filter { t.messages[$0].contains("\"\(opId)\"") } }
            XCTAssertTrue(link.wait { mine($0).count == 2 }, "its result and its broadcast")
            let carriers = Set(mine(link).map { link.carriedBy[$0] })
            XCTAssertEqual(carriers.count, index == 0 ? 1 : 2, index == 0 ? "one batch" : "one transport message each")
        }
        // The master reads a batch from a slave as the same messages one by one.
        let two = (0..<2).map { k in
            let order = JSONValue.object(JSONObject([("uuid", .string(UUID().uuidString)), ("customerName", .string("b\(k)"))]))
            return OperationMessage(operation: .create, orders: [order], opId: "op-in-batch-\(k)").encoded()
        }
        try links[0].sendBatch(two)
        let answered = { (t: SecureTestTerminal, k: Int) in
            t.messages.contains { $0.contains("\"result\"") && $0.contains("op-in-batch-\(k)") }
        }
        XCTAssertTrue(links[0].wait { t in answered(t, 0) && answered(t, 1) }, "both operations of the batch answered")
        // Both links saw the same broadcasts, in order (each the other's too).
        XCTAssertTrue(links[1].wait { $0.messages.contains { $0.contains("op-batch-1") } })
        XCTAssertTrue(links[0].wait { $0.messages.contains { $0.contains("op-batch-1") } })
        for link in links { link.close() }
    }

    func testKeyRotationHandsLinksOverAndThePreviousKeyStillAnswers() throws {
        let master = try startMaster(orders: 1)
        defer { master.stop() }
        let keys = NoiseKeyPair.generate()
        let pairing = try pair(master, code: try openWindow(master), keys: keys)
        XCTAssertTrue(pairing.wait { !$0.controls.isEmpty })
        let oldKey = try XCTUnwrap(pairing.masterKey)
        try hello(pairing)
        XCTAssertTrue(pairing.wait { $0.snapshot.ready })

        let rotated = try api(master).send(method: "POST", path: "/v1/key/rotate")
        XCTAssertEqual(rotated.status, 200)
        let newId = try XCTUnwrap(rotated.body.objectValue?["master"]?.stringValue)
        XCTAssertTrue(pairing.wait { $0.controls.count == 2 }, "the open link is handed over")
        let handover = pairing.controls[1]
        XCTAssertEqual(handover["type"]?.stringValue, "masterKey")
        XCTAssertEqual(handover["master"]?.stringValue, newId)
        let newKey = Array(try XCTUnwrap(Data(base64Encoded: try XCTUnwrap(handover["publicKey"]?.stringValue))))
        XCTAssertEqual(NodeIdentity.nodeId(publicKey: newKey), newId)
        pairing.close()

        // A terminal that missed the handover still gets in with the old key, and is handed over.
        let late = try connectKnown(master, masterKey: oldKey, keys: keys)
        XCTAssertTrue(late.wait { !$0.controls.isEmpty })
        XCTAssertEqual(late.controls.first?["master"]?.stringValue, newId)
        late.close()
        let current = try connectKnown(master, masterKey: newKey, keys: keys)
        XCTAssertTrue(current.wait { $0.masterKey != nil })
        XCTAssertEqual(current.masterKey, newKey)
        XCTAssertTrue(current.controls.isEmpty, "no handover on the current key")
        current.close()
        guard case .master(let m) = try master.status() else { return XCTFail("not a master") }
        XCTAssertEqual(m.nodeId, newId)
        XCTAssertEqual(m.previousNodeId, NodeIdentity.nodeId(publicKey: oldKey))
    }

    func testStorePOSOnlyWithInsecureModeFromAllowedRanges() throws {
        let open = try startMaster(orders: 2) { $0.insecureStorePOS = true }
        defer { open.stop() }
        let storePOS = try SecureTestTerminal(port: open.port, subprotocol: nil)
        // A StorePOS terminal's Creates follow its Removes, a fence and a second's wait (PROTOCOL
        // 4.2.1): a generous deadline for slow builds (sanitizers).
        XCTAssertTrue(
            storePOS.wait(timeout: .seconds(30)) { $0.snapshot.orders == 2 }, "a StorePOS terminal reads the store in insecure mode")
        storePOS.close()
        let elsewhere = try startMaster {
            $0.insecureStorePOS = true; $0.storePOSAllow = [AddressRange(parsing: "10.0.0.0/8")!]
        }
        defer { elsewhere.stop() }
        let refused = try SecureTestTerminal(port: elsewhere.port, subprotocol: nil)
        let end = refused.waitForEnd()
        XCTAssertEqual(end.code, 1008)
        XCTAssertEqual(refused.snapshot.orders, 0)
    }

    func testAStorePOSAppOnItsOwnPathReadsTheStoreAndGetsNoEchoOfItsOrders() throws {
        let master = try startMaster(orders: 2) { $0.insecureStorePOS = true }
        defer { master.stop() }
        // The app asks for `ws://HOST:PORT/device` with no subprotocol.
        let app = try SecureTestTerminal(port: master.port, path: "/device", subprotocol: nil)
        defer { app.close() }
        // A Remove per order, a fence of empty Removes, one Create of both, a fence (PROTOCOL 4.2.1).
        let sequence = 2 + 256 + 1 + 256
        XCTAssertTrue(app.wait(timeout: .seconds(30)) { $0.messages.count == sequence }, "a StorePOS app on /device reads the store")
        XCTAssertEqual(app.snapshot.orders, 2)
        XCTAssertEqual(app.messages.filter { $0.contains(#""operation":0"#) }.count, 1, "one Create of both")
        let other = try SecureTestTerminal(port: master.port, path: "/device", subprotocol: nil)
        defer { other.close() }
        XCTAssertTrue(other.wait(timeout: .seconds(30)) { $0.messages.count == sequence })
        XCTAssertEqual(other.snapshot.orders, 2)

        let uuid = UUID().uuidString
        let create = JSONValue.object(
            JSONObject([("operation", .int(0)), ("orders", .array([.object(JSONObject([("uuid", .string(uuid))]))]))]))
        app.channel.sendText(create.serialized())
        XCTAssertTrue(other.wait(timeout: .seconds(30)) { $0.messages.count == sequence + 1 }, "the other app gets the order")
        XCTAssertTrue(other.messages.last?.contains(uuid) == true)
        // Its own order is not sent back: the next thing it gets is the master's own write.
        let fromMaster = JSONValue.object(JSONObject([("uuid", .string(UUID().uuidString)), ("customerName", .string("api"))]))
        XCTAssertEqual(try api(master).send(method: "POST", path: "/v1/orders", body: fromMaster).status, 201)
        XCTAssertTrue(app.wait(timeout: .seconds(30)) { $0.messages.count == sequence + 1 })
        XCTAssertEqual(app.messages.filter { $0.contains(uuid) }, [], "its own order is not sent back")
    }

    /// The master's current public key, base64, as a pairing terminal learns it.
    private func masterPublicKey(_ master: RunningNode) throws -> String {
        let keyText = try String(contentsOfFile: master.dataDirectory + "/" + NodeDefaults.keyFile, encoding: .utf8)
        let privateKey = Array(try XCTUnwrap(Data(base64Encoded: keyText.trimmingCharacters(in: .whitespacesAndNewlines))))
        return Data(try NoiseKeyPair(privateKey: privateKey).publicKey).base64EncodedString()
    }
}
