import Foundation
import XCTest

@testable import Noise

/// The cacophony vectors (Resources/noise-25519-chachapoly-sha256.json): every handshake message
/// and transport message byte for byte, and the final handshake hash, for both sides.
final class NoiseVectorTests: XCTestCase {
    private struct VectorFile: Decodable {
        var vectors: [Vector]
    }

    private struct Vector: Decodable {
        struct Message: Decodable {
            var payload: String
            var ciphertext: String
        }

        var protocol_name: String
        var init_prologue: String
        var init_ephemeral: String
        var init_static: String?
        var init_remote_static: String?
        var init_psks: [String]?
        var resp_prologue: String
        var resp_ephemeral: String?
        var resp_static: String?
        var resp_remote_static: String?
        var resp_psks: [String]?
        var handshake_hash: String
        var messages: [Message]
    }

    private func loadVectors() throws -> [Vector] {
        let url = try XCTUnwrap(
            Bundle.module.url(
                forResource: "noise-25519-chachapoly-sha256", withExtension: "json", subdirectory: "Resources"))
        return try JSONDecoder().decode(VectorFile.self, from: Data(contentsOf: url)).vectors
    }

    func testEveryVectorInTheFile() throws {
        let vectors = try loadVectors()
        XCTAssertEqual(vectors.count, 59, "the vector file changed")
        var passed = 0
        for vector in vectors {
            let failuresBefore = testRun?.failureCount ?? 0
            do {
                try run(vector)
            } catch {
                XCTFail("\(vector.protocol_name): \(error)")
            }
            if (testRun?.failureCount ?? 0) == failuresBefore { passed += 1 }
        }
        print("Noise vectors: \(passed) of \(vectors.count) passed")
        XCTAssertEqual(passed, vectors.count)
    }

    private func keyPair(_ hex: String?) throws -> NoiseKeyPair? {
        try hex.map { try NoiseKeyPair(privateKey: Hex.bytes($0)) }
    }

    private func run(_ vector: Vector) throws {
        let name = vector.protocol_name
        let noiseProtocol = try NoiseProtocol(name: name)
        var initiator = try NoiseHandshakeState(
            protocol: noiseProtocol, role: .initiator, prologue: Hex.bytes(vector.init_prologue),
            localStaticKey: keyPair(vector.init_static), remoteStaticKey: vector.init_remote_static.map(Hex.bytes),
            preSharedKeys: (vector.init_psks ?? []).map(Hex.bytes), localEphemeralKey: keyPair(vector.init_ephemeral))
        var responder = try NoiseHandshakeState(
            protocol: noiseProtocol, role: .responder, prologue: Hex.bytes(vector.resp_prologue),
            localStaticKey: keyPair(vector.resp_static), remoteStaticKey: vector.resp_remote_static.map(Hex.bytes),
            preSharedKeys: (vector.resp_psks ?? []).map(Hex.bytes), localEphemeralKey: keyPair(vector.resp_ephemeral))

        let handshakeCount = noiseProtocol.pattern.messages.count
        XCTAssertGreaterThan(vector.messages.count, handshakeCount, name)
        for (index, message) in vector.messages.prefix(handshakeCount).enumerated() {
            let payload = Hex.bytes(message.payload)
            let initiatorWrites = index % 2 == 0
            let written =
                initiatorWrites
                ? try initiator.writeMessage(payload: payload) : try responder.writeMessage(payload: payload)
            XCTAssertEqual(Hex.string(written), message.ciphertext, "\(name) handshake message \(index)")
            let read = initiatorWrites ? try responder.readMessage(written) : try initiator.readMessage(written)
            XCTAssertEqual(read, payload, "\(name) handshake payload \(index)")
        }
        XCTAssertTrue(initiator.isComplete, name)
        XCTAssertTrue(responder.isComplete, name)
        XCTAssertEqual(initiator.handshakeHash.map(Hex.string), vector.handshake_hash, name)
        XCTAssertEqual(responder.handshakeHash.map(Hex.string), vector.handshake_hash, name)

        var initiatorSession = try initiator.takeTransportSession()
        var responderSession = try responder.takeTransportSession()
        XCTAssertEqual(Hex.string(initiatorSession.handshakeHash), vector.handshake_hash, name)
        for (index, message) in vector.messages.enumerated().dropFirst(handshakeCount) {
            let payload = Hex.bytes(message.payload)
            // Transport messages keep alternating in two-way patterns; in one-way patterns only
            // the initiator sends.
            let initiatorSends = noiseProtocol.pattern.isOneWay || index % 2 == 0
            let sent = initiatorSends ? try initiatorSession.encrypt(payload) : try responderSession.encrypt(payload)
            XCTAssertEqual(Hex.string(sent), message.ciphertext, "\(name) transport message \(index)")
            let received = initiatorSends ? try responderSession.decrypt(sent) : try initiatorSession.decrypt(sent)
            XCTAssertEqual(received, payload, "\(name) transport payload \(index)")
        }
    }
}
