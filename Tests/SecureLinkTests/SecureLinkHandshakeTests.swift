import Noise
import SecureLink
import XCTest

final class SecureLinkHandshakeTests: XCTestCase {
    let code = PairingCode.generate(using: counterRandom(seed: 7))

    func testPairingHappyPath() throws {
        var (slave, first) = try SecureLink.pairingInitiator(code: code, localStatic: slaveKey, payload: slavePayload)
        var master = try SecureLink.pairingResponder(code: code, localStatic: masterKey, payload: masterPayload)
        XCTAssertEqual(slave.phase, .handshaking)
        XCTAssertEqual(first.count, 1)

        let second = try master.receive(sent(first)[0])
        XCTAssertEqual(second.count, 1)
        XCTAssertEqual(master.phase, .handshaking)

        let third = try slave.receive(sent(second)[0])
        XCTAssertEqual(third.count, 2)
        XCTAssertEqual(third[1], .established(peerStaticKey: masterKey.publicKey, peerPayload: masterPayload))
        XCTAssertEqual(slave.phase, .established)
        XCTAssertEqual(slave.peerStaticKey, masterKey.publicKey)

        let done = try master.receive(sent(third)[0])
        XCTAssertEqual(done, [.established(peerStaticKey: slaveKey.publicKey, peerPayload: slavePayload)])
        XCTAssertEqual(master.phase, .established)
        XCTAssertEqual(master.peerStaticKey, slaveKey.publicKey)
        XCTAssertNotNil(master.handshakeHash)
        XCTAssertEqual(master.handshakeHash, slave.handshakeHash)

        let paired = Array(#"{"type":"paired"}"#.utf8)
        XCTAssertEqual(try deliver(try master.seal(paired, control: true), to: &slave), [.control(paired)])
        let order = Array(#"{"type":"order"}"#.utf8)
        XCTAssertEqual(try deliver(try slave.seal(order), to: &master), [.message(order)])
    }

    func testWrongCodeFailsAtTheResponderThirdMessage() throws {
        let other = PairingCode.generate(using: counterRandom(seed: 8))
        XCTAssertNotEqual(other, code)
        var (slave, first) = try SecureLink.pairingInitiator(code: other, localStatic: slaveKey, payload: slavePayload)
        var master = try SecureLink.pairingResponder(code: code, localStatic: masterKey, payload: masterPayload)
        let second = try master.receive(sent(first)[0])
        // psk3 mixes in only at message 3, so the slave cannot tell yet.
        let third = try slave.receive(sent(second)[0])
        XCTAssertLinkError(.authenticationFailed, try master.receive(sent(third)[0]))
        XCTAssertEqual(master.phase, .failed)
        XCTAssertLinkError(.wrongState, try master.receive(sent(third)[0]))
        XCTAssertLinkError(.wrongState, try master.seal([1]))
    }

    func testResponderWithSeveralCodesPairsWithAnyOfThemAndTellsWhich() throws {
        let codes = (20..<24).map { PairingCode.generate(using: counterRandom(seed: UInt8($0))) }
        for (index, used) in codes.enumerated() {
            var (slave, first) = try SecureLink.pairingInitiator(code: used, localStatic: slaveKey, payload: slavePayload)
            var master = try SecureLink.pairingResponder(codes: codes, localStatic: masterKey, payload: masterPayload)
            let third = try slave.receive(sent(try master.receive(sent(first)[0]))[0])
            let done = try master.receive(sent(third)[0])
            XCTAssertEqual(done, [.established(peerStaticKey: slaveKey.publicKey, peerPayload: slavePayload)])
            XCTAssertEqual(master.pairingCodeIndex, index)
            XCTAssertEqual(master.handshakeHash, slave.handshakeHash)
            let paired = Array(#"{"type":"paired"}"#.utf8)
            XCTAssertEqual(try deliver(try master.seal(paired, control: true), to: &slave), [.control(paired)])
        }
    }

    func testResponderWithSeveralCodesRefusesAnotherAfterTheSameSteps() throws {
        let codes = (30..<33).map { PairingCode.generate(using: counterRandom(seed: UInt8($0))) }
        var (slave, first) = try SecureLink.pairingInitiator(code: code, localStatic: slaveKey, payload: slavePayload)
        var master = try SecureLink.pairingResponder(codes: codes, localStatic: masterKey, payload: masterPayload)
        let second = try master.receive(sent(first)[0])
        XCTAssertEqual(second.count, 1, "message 2 comes whatever the codes")
        let third = try slave.receive(sent(second)[0])
        XCTAssertLinkError(.authenticationFailed, try master.receive(sent(third)[0]))
        XCTAssertNil(master.pairingCodeIndex)
        XCTAssertEqual(master.phase, .failed)
        XCTAssertLinkError(
            .unsupported, try SecureLink.pairingResponder(codes: [], localStatic: masterKey, payload: masterPayload))
        let many = Array(repeating: code, count: SecureLink.maxPairingCodes + 1)
        XCTAssertLinkError(.unsupported, try SecureLink.pairingResponder(codes: many, localStatic: masterKey, payload: masterPayload))
    }

    func testPairingResponderRefusesTruncatedFirstMessage() throws {
        var master = try SecureLink.pairingResponder(code: code, localStatic: masterKey, payload: masterPayload)
        XCTAssertLinkError(.malformed, try master.receive(Array(repeating: 9, count: 20)))
        XCTAssertEqual(master.phase, .failed)
    }

    func testKnownHandshakeWithTheCurrentKey() throws {
        var (slave, first) = try SecureLink.knownInitiator(masterKey: masterKey.publicKey, localStatic: slaveKey)
        var master = SecureLink.knownResponder(keys: [masterKey, previousMasterKey])
        XCTAssertEqual(try master.receive(sent(first)[0]), [.peerKeyPresented(staticKey: slaveKey.publicKey)])
        XCTAssertEqual(master.phase, .awaitingAcceptance)
        XCTAssertEqual(master.responderKeyIndex, 0)
        XCTAssertLinkError(.wrongState, try master.seal([1]))

        let second = try master.accept(payload: masterPayload)
        XCTAssertEqual(second.count, 2)
        XCTAssertEqual(second[1], .established(peerStaticKey: slaveKey.publicKey, peerPayload: []))
        XCTAssertEqual(
            try slave.receive(sent(second)[0]),
            [.established(peerStaticKey: masterKey.publicKey, peerPayload: masterPayload)])
        XCTAssertEqual(slave.handshakeHash, master.handshakeHash)
        XCTAssertEqual(try deliver(try slave.seal([1, 2, 3]), to: &master), [.message([1, 2, 3])])
        XCTAssertEqual(try deliver(try master.seal([4, 5]), to: &slave), [.message([4, 5])])
    }

    func testKnownHandshakeWithThePreviousKey() throws {
        var (slave, first) = try SecureLink.knownInitiator(
            masterKey: previousMasterKey.publicKey, localStatic: slaveKey)
        var master = SecureLink.knownResponder(keys: [masterKey, previousMasterKey])
        XCTAssertEqual(try master.receive(sent(first)[0]), [.peerKeyPresented(staticKey: slaveKey.publicKey)])
        XCTAssertEqual(master.responderKeyIndex, 1)
        let second = try master.accept(payload: masterPayload)
        XCTAssertEqual(
            try slave.receive(sent(second)[0]),
            [.established(peerStaticKey: previousMasterKey.publicKey, peerPayload: masterPayload)])
    }

    func testKnownResponderWithoutTheKeyFails() throws {
        let (_, first) = try SecureLink.knownInitiator(masterKey: strangerKey.publicKey, localStatic: slaveKey)
        var master = SecureLink.knownResponder(keys: [masterKey, previousMasterKey])
        XCTAssertLinkError(.authenticationFailed, try master.receive(sent(first)[0]))
        XCTAssertEqual(master.phase, .failed)
        XCTAssertNil(master.responderKeyIndex)
        XCTAssertLinkError(.wrongState, try master.accept(payload: []))
    }

    func testKnownResponderRefusesTruncatedFirstMessage() throws {
        let (_, first) = try SecureLink.knownInitiator(masterKey: masterKey.publicKey, localStatic: slaveKey)
        var master = SecureLink.knownResponder(keys: [masterKey])
        XCTAssertLinkError(.malformed, try master.receive(Array(sent(first)[0].dropLast())))
    }

    func testKnownInitiatorRefusesSecondMessageMadeForAnotherSlave() throws {
        let (_, strangerFirst) = try SecureLink.knownInitiator(masterKey: masterKey.publicKey, localStatic: strangerKey)
        var master = SecureLink.knownResponder(keys: [masterKey])
        _ = try master.receive(sent(strangerFirst)[0])
        let secondForStranger = try master.accept(payload: masterPayload)

        var (slave, _) = try SecureLink.knownInitiator(masterKey: masterKey.publicKey, localStatic: slaveKey)
        XCTAssertLinkError(.authenticationFailed, try slave.receive(sent(secondForStranger)[0]))
        XCTAssertEqual(slave.phase, .failed)
        XCTAssertNil(slave.peerStaticKey)
    }

    func testKnownInitiatorRefusesImpostorMaster() throws {
        var (slave, first) = try SecureLink.knownInitiator(masterKey: masterKey.publicKey, localStatic: slaveKey)
        // An impostor cannot read message 1, so it answers with a handshake of its own.
        let (_, impostorFirst) = try SecureLink.knownInitiator(
            masterKey: strangerKey.publicKey, localStatic: previousMasterKey)
        var impostor = SecureLink.knownResponder(keys: [strangerKey])
        _ = try impostor.receive(sent(impostorFirst)[0])
        XCTAssertLinkError(.authenticationFailed, try slave.receive(sent(try impostor.accept(payload: []))[0]))
        _ = first
    }

    func testWrongCallsAreRefused() throws {
        XCTAssertLinkError(.unsupported, try SecureLink.knownInitiator(masterKey: [1, 2], localStatic: slaveKey))
        var master = SecureLink.knownResponder(keys: [masterKey])
        XCTAssertLinkError(.wrongState, try master.accept(payload: []))
        XCTAssertEqual(master.phase, .handshaking)
        XCTAssertLinkError(.wrongState, try master.seal([]))
        XCTAssertEqual(master.phase, .handshaking)
    }
}
