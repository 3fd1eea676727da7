import XCTest

@testable import Noise

/// Builds matching initiator and responder handshakes with fresh keys, and runs them.
struct NoisePair {
    var initiator: NoiseHandshakeState
    var responder: NoiseHandshakeState
    let initiatorStatic = NoiseKeyPair.generate()
    let responderStatic = NoiseKeyPair.generate()

    init(_ protocolName: String, psk: [UInt8] = [UInt8](repeating: 7, count: 32)) throws {
        let noiseProtocol = try NoiseProtocol(name: protocolName)
        let pattern = noiseProtocol.pattern
        let psks = [[UInt8]](repeating: psk, count: pattern.preSharedKeyCount)
        initiator = try NoiseHandshakeState(
            protocol: noiseProtocol, role: .initiator, prologue: Array("prologue".utf8),
            localStaticKey: pattern.initiatorNeedsStatic ? initiatorStatic : nil,
            remoteStaticKey: pattern.responderPreMessage.contains(.s) ? responderStatic.publicKey : nil,
            preSharedKeys: psks)
        responder = try NoiseHandshakeState(
            protocol: noiseProtocol, role: .responder, prologue: Array("prologue".utf8),
            localStaticKey: pattern.responderNeedsStatic ? responderStatic : nil,
            remoteStaticKey: pattern.initiatorPreMessage.contains(.s) ? initiatorStatic.publicKey : nil,
            preSharedKeys: psks)
    }

    /// Runs every handshake message and returns both transport sessions.
    mutating func handshake() throws -> (initiator: NoiseTransportSession, responder: NoiseTransportSession) {
        var index = 0
        while !(initiator.isComplete && responder.isComplete) {
            let payload = Array("handshake \(index)".utf8)
            if index % 2 == 0 {
                XCTAssertEqual(try responder.readMessage(initiator.writeMessage(payload: payload)), payload)
            } else {
                XCTAssertEqual(try initiator.readMessage(responder.writeMessage(payload: payload)), payload)
            }
            index += 1
        }
        return (try initiator.takeTransportSession(), try responder.takeTransportSession())
    }
}

/// Asserts that `body` throws a `NoiseError` with `code`.
func XCTAssertNoiseError<T>(
    _ code: NoiseError.Code, _ body: @autoclosure () throws -> T, _ message: String = "",
    file: StaticString = #filePath, line: UInt = #line
) {
    do {
        _ = try body()
        XCTFail("expected \(code), nothing was thrown \(message)", file: file, line: line)
    } catch let error as NoiseError {
        XCTAssertEqual(error.code, code, "\(error) \(message)", file: file, line: line)
    } catch {
        XCTFail("expected a NoiseError \(code), got \(error)", file: file, line: line)
    }
}
