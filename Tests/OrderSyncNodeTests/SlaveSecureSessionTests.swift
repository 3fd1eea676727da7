import Foundation
import JSON
import Noise
import SecureLink
import WireTestSupport
import XCTest

@testable import OrderSyncNode

/// The slave's end of the secure link against the real `SecureLink` responders a master runs:
/// nothing reaches the engine before the link is secured, pairing trusts the master only once
/// its `paired` message decrypts, and any failure ends the session with nothing applied.
final class SlaveSecureSessionTests: XCTestCase {
    private let slaveKey = NoiseKeyPair.generate()
    private let masterKeys = NoiseKeyPair.generate()
    private let code = PairingCode.generate()

    private var masterId: String { NodeIdentity.nodeId(publicKey: masterKeys.publicKey) }

    private func greetingPayload(id: String? = nil) -> [UInt8] {
        JSONValue.object(JSONObject([("master", .string(id ?? masterId)), ("store", .string("shop1"))])).serializedBytes()
    }

    private func control(_ members: [(String, JSONValue)]) -> [UInt8] {
        JSONValue.object(JSONObject(members)).serializedBytes()
    }

    private func sent(_ outputs: [SlaveSecureSession.Output]) -> [[UInt8]] {
        outputs.compactMap { if case .send(let b) = $0 { return b } else { return nil } }
    }

    private func sent(_ events: [SecureLink.Event]) -> [[UInt8]] {
        events.compactMap { if case .send(let b) = $0 { return b } else { return nil } }
    }

    private func start(_ credential: MasterCredential) -> (SlaveSecureSession, [UInt8]) {
        let (session, outputs) = SlaveSecureSession.start(
            credential: credential, localStatic: slaveKey, terminalName: "bar-2", terminalId: "t-1")
        XCTAssertEqual(outputs.count, 1)
        return (session, sent(outputs)[0])
    }

    /// A known link secured against a master holding `masterKeys`.
    private func securedKnownLink() throws -> (SlaveSecureSession, SecureLink) {
        var (session, first) = start(.known(masterKey: masterKeys.publicKey))
        var master = SecureLink.knownResponder(keys: [masterKeys])
        XCTAssertEqual(try master.receive(first), [.peerKeyPresented(staticKey: slaveKey.publicKey)])
        let answer = try master.accept(payload: greetingPayload())
        guard case .send(let second) = answer.first else { throw CancellationError() }
        let greeting = MasterGreeting(masterId: masterId, store: "shop1", publicKey: masterKeys.publicKey)
        let outputs = session.received(second)
        XCTAssertEqual(outputs.last, .secured(greeting))
        try saysItReadsBatches(sent(outputs), to: &master)
        XCTAssertTrue(session.isSecured)
        return (session, master)
    }

    /// `messages` (what the session sent as it was secured) are its `features` control message,
    /// which `master` reads.
    private func saysItReadsBatches(_ messages: [[UInt8]], to master: inout SecureLink) throws {
        XCTAssertEqual(messages.count, 1)
        XCTAssertEqual(try master.receive(messages[0]), [.control(SecureLinkFeatures.readsBatches)])
    }

    func testPairingTrustsTheMasterOnlyOnceItsPairedMessageDecrypts() throws {
        var (session, first) = start(.pairing(code))
        var master = try SecureLink.pairingResponder(code: code, localStatic: masterKeys, payload: greetingPayload())
        let second = sent(try master.receive(first))
        XCTAssertEqual(second.count, 1)
        let afterSecond = session.received(second[0])
        let third = sent(afterSecond)
        XCTAssertEqual(afterSecond.count, 1, "message 3 only: the master has not proved the code yet")
        XCTAssertFalse(session.isSecured)
        guard case .established(let slaveStatic, let payload)? = try master.receive(third[0]).first else {
            return XCTFail("the master did not establish")
        }
        XCTAssertEqual(slaveStatic, slaveKey.publicKey)
        let hello = try XCTUnwrap(try JSONParser.parse(payload).objectValue)
        XCTAssertEqual(hello["name"]?.stringValue, "bar-2")
        XCTAssertEqual(hello["terminal"]?.stringValue, "t-1")
        // A sealed message from this side before `paired` is refused here, not sent.
        var early = session
        guard case .failed? = early.seal(Array("{}".utf8)).first else { return XCTFail("sealed before secured") }

        let paired = try master.seal(
            control([("type", .string("paired")), ("terminal", .string("X")), ("name", .string("bar-2"))]), control: true)
        let greeting = MasterGreeting(masterId: masterId, store: "shop1", publicKey: masterKeys.publicKey)
        let securing = session.received(paired[0])
        XCTAssertEqual(securing.first, .paired(greeting))
        XCTAssertEqual(securing.last, .secured(greeting))
        try saysItReadsBatches(sent(securing), to: &master)

        // Sync messages flow both ways now.
        let out = sent(session.seal(Array(#"{"type":"hello"}"#.utf8)))
        XCTAssertEqual(try master.receive(out[0]), [.message(Array(#"{"type":"hello"}"#.utf8))])
        let snapshot = try master.seal(Array(#"{"type":"snapshot"}"#.utf8))
        XCTAssertEqual(session.received(snapshot[0]), [.message(Array(#"{"type":"snapshot"}"#.utf8))])
    }

    func testPairingWithAWrongCodeFailsAtTheMasterAndNothingReachesTheSlave() throws {
        var (session, first) = start(.pairing(code))
        var master = try SecureLink.pairingResponder(code: PairingCode.generate(), localStatic: masterKeys, payload: greetingPayload())
        let second = sent(try master.receive(first))
        let third = sent(session.received(second[0]))
        XCTAssertThrowsError(try master.receive(third[0])) { error in
            XCTAssertEqual((error as? SecureLinkError)?.kind, .authenticationFailed)
        }
        XCTAssertFalse(session.isSecured)
    }

    func testAMasterThatSendsASyncMessageBeforePairedIsRefused() throws {
        var (session, first) = start(.pairing(code))
        var master = try SecureLink.pairingResponder(code: code, localStatic: masterKeys, payload: greetingPayload())
        let third = sent(session.received(sent(try master.receive(first))[0]))
        _ = try master.receive(third[0])
        let forged = try master.seal(Array(#"{"type":"snapshot"}"#.utf8))
        guard case .failed(let failure)? = session.received(forged[0]).first else { return XCTFail("accepted") }
        XCTAssertTrue(failure.masterUnproven)
        XCTAssertTrue(session.hasFailed)
        XCTAssertEqual(session.received(forged[0]), [], "a failed session takes nothing more")
    }

    func testKnownLinkFlowsAndAnswersOnlyFromTheTrustedKey() throws {
        var (session, master) = try securedKnownLink()
        let op = try master.seal(Array(#"{"type":"op"}"#.utf8))
        XCTAssertEqual(session.received(op[0]), [.message(Array(#"{"type":"op"}"#.utf8))])
        // It said it reads batches: three messages in one transport message, in order.
        let three = [#"{"seq":1}"#, #"{"seq":2}"#, #"{"seq":3}"#].map { Array($0.utf8) }
        let batch = try master.sealBatch(three)
        XCTAssertEqual(batch.count, 1)
        XCTAssertEqual(session.received(batch[0]), three.map { .message($0) })
        // A master with another key cannot read the first message at all.
        let (_, first) = start(.known(masterKey: masterKeys.publicKey))
        var rogue = SecureLink.knownResponder(keys: [NoiseKeyPair.generate()])
        XCTAssertThrowsError(try rogue.receive(first))
    }

    func testAPayloadNamingAnotherIdIsRefused() throws {
        var (session, first) = start(.known(masterKey: masterKeys.publicKey))
        var master = SecureLink.knownResponder(keys: [masterKeys])
        _ = try master.receive(first)
        let answer = try master.accept(payload: greetingPayload(id: "AAAA-BBBB"))
        guard case .send(let second) = answer.first else { return XCTFail("no message 2") }
        guard case .failed(let failure)? = session.received(second).first else { return XCTFail("accepted") }
        XCTAssertTrue(failure.masterUnproven)
    }

    func testAForeignSecondMessageIsUnproven() throws {
        var (session, _) = start(.known(masterKey: masterKeys.publicKey))
        guard case .failed(let failure)? = session.received(Array(repeating: 7, count: 48)).first else {
            return XCTFail("accepted")
        }
        XCTAssertTrue(failure.masterUnproven)
    }

    func testAFlippedBitOrAReplayEndsTheLinkWithNothingApplied() throws {
        var (session, master) = try securedKnownLink()
        var message = try master.seal(Array(#"{"type":"op","n":1}"#.utf8))[0]
        var replay = session
        XCTAssertEqual(replay.received(message), [.message(Array(#"{"type":"op","n":1}"#.utf8))])
        guard case .failed(let again)? = replay.received(message).first else { return XCTFail("a replay was accepted") }
        XCTAssertFalse(again.masterUnproven)
        message[message.count - 1] ^= 1
        guard case .failed? = session.received(message).first else { return XCTFail("a flipped bit was accepted") }
        XCTAssertTrue(session.hasFailed)
    }

    func testATextMessageEndsTheLink() throws {
        var (session, _) = try securedKnownLink()
        guard case .failed = session.receivedText() else { return XCTFail("text accepted") }
        XCTAssertTrue(session.hasFailed)
    }

    func testAMasterKeyHandoverIsCheckedAndReported() throws {
        var (session, master) = try securedKnownLink()
        let newKey = NoiseKeyPair.generate().publicKey
        let newId = NodeIdentity.nodeId(publicKey: newKey)
        let good = try master.seal(
            control([
                ("type", .string("masterKey")), ("master", .string(newId)),
                ("publicKey", .string(Data(newKey).base64EncodedString())),
            ]), control: true)
        XCTAssertEqual(session.received(good[0]), [.masterKeyHandover(masterId: newId, publicKey: newKey)])
        let unknown = try master.seal(control([("type", .string("somethingNew"))]), control: true)
        XCTAssertEqual(session.received(unknown[0]), [], "a control type of a newer master is ignored")
        let mismatched = try master.seal(
            control([
                ("type", .string("masterKey")), ("master", .string(masterId)),
                ("publicKey", .string(Data(newKey).base64EncodedString())),
            ]), control: true)
        guard case .failed? = session.received(mismatched[0]).first else { return XCTFail("a key with another id was taken") }
    }
}
