import EventLoopIO
import Foundation
import Glibc
import JSON
import Logging
import NodePolicy
import Noise
import OrderSyncNode
import SecureLink
import XCTest

/// A real slave's start-up rules for pairing: no trust file and no code is refused with the
/// operator's next step; a trust file others may read is refused; a code already used is
/// ignored.
final class SlavePairingNodeTests: XCTestCase {
    private func temporaryDirectory() -> String {
        let d = NSTemporaryDirectory() + "ordersync-pairing-" + UUID().uuidString
        addTeardownBlock { try? FileManager.default.removeItem(atPath: d) }
        return d
    }

    private let nowhere = MasterURL(host: "127.0.0.1", port: 9)

    func testAnUnpairedSlaveWithoutACodeRefusesToStart() throws {
        XCTAssertThrowsError(try RunningNode(role: .slave, dataDirectory: temporaryDirectory(), name: "bar-2", masterURL: nowhere)) {
            XCTAssertEqual(
                "\($0)", "this terminal is not paired: run `ordersync pair` on the master, then start with --pair CODE")
        }
    }

    func testAPairedSlaveStartsWithoutACodeAndShowsItsMaster() throws {
        let directory = temporaryDirectory()
        let code = PairingCode.generate()
        // A first start creates the directory (and the key); the trust is then what a pairing leaves.
        let first = try RunningNode(
            role: .slave, dataDirectory: directory, name: "bar-2", masterURL: nowhere, configure: { $0.pairingCode = code })
        first.stop()
        let masterKey = NoiseKeyPair.generate().publicKey
        let trust = MasterTrust(
            store: "shop1", publicKey: masterKey, pairedAtMillis: 1, codeDigest: MasterTrust.codeDigest(ofCodeBytes: code.bytes))
        try trust.write(to: directory + "/" + NodeDefaults.masterTrustFile)

        for again in [nil, code] {
            let slave = try RunningNode(
                role: .slave, dataDirectory: directory, name: "bar-2", masterURL: nowhere, configure: { $0.pairingCode = again })
            guard case .slave(let status) = try slave.status() else { return XCTFail("not a slave") }
            XCTAssertEqual(status.masterId, trust.master)
            XCTAssertEqual(status.pairing, .paired, "the code it paired with is ignored")
            XCTAssertTrue(StatusText.render(.slave(status)).contains("master id: \(trust.master)\n"), StatusText.render(.slave(status)))
            slave.stop()
        }
        let anew = try RunningNode(
            role: .slave, dataDirectory: directory, name: "bar-2", masterURL: nowhere,
            configure: { $0.pairingCode = PairingCode.generate() })
        guard case .slave(let status) = try anew.status() else { return XCTFail("not a slave") }
        XCTAssertEqual(status.pairing, .pairing, "a new code pairs anew")
        XCTAssertEqual(status.masterId, trust.master, "the old trust stays until that succeeds")
        anew.stop()
        XCTAssertEqual(try MasterTrust.load(path: directory + "/" + NodeDefaults.masterTrustFile), trust)

        XCTAssertEqual(chmod(directory + "/" + NodeDefaults.masterTrustFile, 0o644), 0)
        XCTAssertThrowsError(try RunningNode(role: .slave, dataDirectory: directory, name: "bar-2", masterURL: nowhere)) {
            XCTAssertTrue("\($0)".contains("chmod 600"), "\($0)")
        }
    }

    // MARK: The secure link, against a master stand-in

    private func slaveStatus(_ node: RunningNode) throws -> SlaveStatus {
        guard case .slave(let s) = try node.status() else { throw CancellationError() }
        return s
    }

    private func waitForStatus(_ node: RunningNode, _ what: String, _ condition: (SlaveStatus) -> Bool) throws -> SlaveStatus {
        let deadline = Date().addingTimeInterval(10)
        while true {
            let s = try slaveStatus(node)
            if condition(s) { return s }
            if Date() > deadline {
                XCTFail("timed out waiting for \(what): \(s)")
                throw CancellationError()
            }
            usleep(10_000)
        }
    }

    private func isHello(_ text: String?) -> Bool {
        guard let text, let object = try? JSONParser.parse(text).objectValue else { return false }
        return object["type"]?.stringValue == "hello"
    }

    func testPairsThenReconnectsOverIKAndTakesAKeyHandover() throws {
        let masterKey = NoiseKeyPair.generate()
        let masterId = NodeIdentity.nodeId(publicKey: masterKey.publicKey)
        let code = PairingCode.generate()
        let master = try FakeSecureMaster(.init(code: code, keys: [masterKey]))
        defer { master.stop() }
        let directory = temporaryDirectory()
        let trustPath = directory + "/" + NodeDefaults.masterTrustFile
        let url = MasterURL(host: "127.0.0.1", port: master.port)
        let slave = try RunningNode(
            role: .slave, dataDirectory: directory, name: "bar-2", masterURL: url, configure: { $0.pairingCode = code })

        try master.wait(for: "a hello over the pairing link") { isHello($0.first?.messages.first) }
        XCTAssertEqual(master.seen[0].subprotocol, "ordersync.pair.v1")
        let trust = try XCTUnwrap(try MasterTrust.load(path: trustPath))
        XCTAssertEqual(trust.master, masterId)
        XCTAssertEqual(trust.store, "shop1")
        XCTAssertEqual(trust.codeDigest, MasterTrust.codeDigest(ofCodeBytes: code.bytes))
        let paired = try slaveStatus(slave)
        XCTAssertEqual(paired.pairing, .paired)
        XCTAssertEqual(paired.masterId, masterId)
        XCTAssertEqual(paired.master.state, .syncing, "secured and said hello; the stand-in sends no snapshot")

        // The link drops: the next one is IK with the trusted key, from the same slave key.
        master.onLoop { $0.closeAll(code: .goingAway, reason: "restart") }
        try master.wait(for: "a hello over an IK link") {
            $0.count >= 2 && $0[1].subprotocol == "ordersync.ik.v1" && isHello($0[1].messages.first)
        }
        XCTAssertEqual(master.seen[1].slaveKey, master.seen[0].slaveKey)

        // A handover to a new key over the authenticated link replaces the trusted key.
        let newKey = NoiseKeyPair.generate()
        let newId = NodeIdentity.nodeId(publicKey: newKey.publicKey)
        master.onLoop { server in
            server.behaviour.keys = [newKey, masterKey]
            server.sendControl(
                .object(
                    JSONObject([
                        ("type", .string("masterKey")), ("master", .string(newId)),
                        ("publicKey", .string(Data(newKey.publicKey).base64EncodedString())),
                    ])))
        }
        _ = try waitForStatus(slave, "the handover") { $0.masterId == newId }
        let handedOver = try XCTUnwrap(try MasterTrust.load(path: trustPath))
        XCTAssertEqual(handedOver.master, newId)
        XCTAssertEqual(handedOver.previousKeys.map(\.master), [masterId])
        slave.stop()

        // Restarted without a code: IK straight to the new key.
        let again = try RunningNode(role: .slave, dataDirectory: directory, name: "bar-2", masterURL: url)
        try master.wait(for: "a hello after the restart") {
            $0.count >= 3 && $0[2].subprotocol == "ordersync.ik.v1" && isHello($0[2].messages.first)
        }
        again.stop()
    }

    func testAWrongCodeStopsTheSlaveAndTrustsNothing() throws {
        let master = try FakeSecureMaster(.init(code: PairingCode.generate(), keys: [NoiseKeyPair.generate()]))
        defer { master.stop() }
        let directory = temporaryDirectory()
        let slave = try RunningNode(
            role: .slave, dataDirectory: directory, name: "bar-2", masterURL: MasterURL(host: "127.0.0.1", port: master.port),
            configure: { $0.pairingCode = PairingCode.generate() })
        try waitUntil("the slave to stop after its refused code", timeoutSeconds: 10) { (try? slave.status()) == nil }
        slave.stop()
        XCTAssertEqual(master.seen.count, 1, "one try of the code, no retry")
        XCTAssertEqual(master.seen.first?.messages, [], "nothing was sent to a master that did not prove the code")
        XCTAssertNil(try MasterTrust.load(path: directory + "/" + NodeDefaults.masterTrustFile))
    }

    /// A slave paired with `masterKey` (its trust file written before it starts).
    private func pairedSlave(with masterKey: NoiseKeyPair, port: UInt16, handshake: Duration? = nil) throws -> RunningNode {
        let directory = temporaryDirectory()
        let code = PairingCode.generate()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        XCTAssertEqual(chmod(directory, 0o700), 0)
        let trust = MasterTrust(
            store: "shop1", publicKey: masterKey.publicKey, pairedAtMillis: 1, codeDigest: MasterTrust.codeDigest(ofCodeBytes: code.bytes))
        try trust.write(to: directory + "/" + NodeDefaults.masterTrustFile)
        return try RunningNode(
            role: .slave, dataDirectory: directory, name: "bar-2", masterURL: MasterURL(host: "127.0.0.1", port: port),
            configure: { c in if let h = handshake { c.handshakeTimeout = h } })
    }

    func testAMasterWithAnotherKeyGetsNothing() throws {
        let master = try FakeSecureMaster(.init(code: nil, keys: [NoiseKeyPair.generate()]))
        defer { master.stop() }
        let slave = try pairedSlave(with: NoiseKeyPair.generate(), port: master.port)
        try master.wait(for: "two attempts") { $0.count >= 2 }
        let status = try slaveStatus(slave)
        XCTAssertNotEqual(status.master.state, .syncing)
        XCTAssertNotEqual(status.master.state, .live)
        slave.stop()
        XCTAssertTrue(master.seen.allSatisfy { $0.messages.isEmpty && $0.slaveKey == nil }, "\(master.seen)")
    }

    func testAMasterThatNeverAnswersFailsWithinTheHandshakeDeadline() throws {
        let masterKey = NoiseKeyPair.generate()
        let master = try FakeSecureMaster(.init(code: nil, keys: [masterKey], silent: true))
        defer { master.stop() }
        let slave = try pairedSlave(with: masterKey, port: master.port, handshake: .milliseconds(300))
        let failed = try waitForStatus(slave, "the attempt to fail") { $0.master.lastError != nil }
        XCTAssertEqual(failed.master.lastError, "no secure handshake within 300 ms")
        slave.stop()
    }

    func testAnUnknownTerminalIsShownAsRefused() throws {
        let masterKey = NoiseKeyPair.generate()
        let master = try FakeSecureMaster(.init(code: nil, keys: [masterKey], refuseKnownProven: "unknown terminal"))
        defer { master.stop() }
        let slave = try pairedSlave(with: masterKey, port: master.port)
        let refused = try waitForStatus(slave, "the refusal") { $0.pairing == .refused }
        XCTAssertEqual(refused.master.lastError, "secure link failed: the master refused this terminal: unknown terminal")
        XCTAssertEqual(refused.master.state, .waiting)
        XCTAssertTrue(StatusText.render(.slave(refused)).contains("(refused)"))
        // Retried at most every 30 s, not after the usual backoff (250 ms, then doubling): the
        // slave itself reports a second spent waiting since the refusal. An attempt in between
        // would have left the waiting state (and restarted its clock).
        let waited = try waitForStatus(slave, "a second of waiting after the refusal") {
            $0.master.state != .waiting || $0.master.sinceSeconds >= 1
        }
        XCTAssertEqual(waited.master.state, .waiting)
        XCTAssertEqual(waited.master.lastError, refused.master.lastError)
        XCTAssertEqual(master.seen.count, 1)
        slave.stop()
    }

    func testARefusalThatProvesNoKeyNeverMeansPairingAgain() throws {
        let masterKey = NoiseKeyPair.generate()
        // It even reads the slave's first message (it holds the key), but closes before answering.
        let device = try FakeSecureMaster(.init(code: nil, keys: [masterKey], refuseKnown: "unknown terminal"))
        defer { device.stop() }
        let slave = try pairedSlave(with: masterKey, port: device.port)
        let failed = try waitForStatus(slave, "the refusal") { $0.master.lastError != nil }
        XCTAssertEqual(failed.master.lastError, "unknown terminal")
        XCTAssertEqual(failed.pairing, .paired, "a 1008 before the trusted key was proved is not the master's word")
        // Retried on the ordinary backoff (250 ms, then doubling), not after 30 s.
        _ = try waitForStatus(slave, "a second attempt") { _ in device.seen.count >= 2 }
        XCTAssertEqual(try slaveStatus(slave).pairing, .paired)
        slave.stop()
    }
}
