import Noise
import WebSocket
import XCTest

@testable import SecureLink

/// Sealing inside the WebSocket frame (`seal(_:control:frameHeader:)`, the master's fan-out)
/// against sealing and then framing the transport message (`seal(_:control:)` and
/// `FrameEncoder.append`): byte for byte the same frames, which the peer reads.
final class SecureLinkFramedSealTests: XCTestCase {
    private func binaryHeader(_ length: Int, _ output: inout [UInt8]) {
        FrameEncoder.appendHeader(opcode: .binary, payloadLength: length, to: &output)
    }

    private func frame(_ payload: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        payload.withUnsafeBytes { FrameEncoder.append(opcode: .binary, payload: $0, maskingKey: nil, to: &output) }
        return output
    }

    /// Messages of every frame-length form (7-bit, 16-bit, 64-bit), chunked ones, control ones
    /// and rekeys (every third message): two copies of one established link, one sealing each way.
    func testFramedSealEqualsSealThenFrameAndThePeerReadsIt() throws {
        let options = SecureLinkOptions(maxMessageBytes: 300_000, rekeyInterval: 3)
        var (slave, master) = try establishedPair(options: options)
        var framing = master
        var plain = master
        let sizes = [0, 1, 92, 93, 108, 109, 65_517, 65_518, 65_519, 70_000, 200_000]
        for (index, size) in sizes.enumerated() {
            let message = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ index) }
            let control = index % 4 == 1
            let framed = try framing.seal(message, control: control, frameHeader: binaryHeader)
            let expected = try plain.seal(message, control: control).map(frame)
            XCTAssertEqual(framed, expected, "message of \(size) bytes")
            var events: [SecureLink.Event] = []
            for frame in framed {
                XCTAssertEqual(frame[0], 0x82, "a final binary frame")
                let headerSize = [126: 4, 127: 10][Int(frame[1] & 0x7F)] ?? 2
                events += try slave.receive(Array(frame[headerSize...]))
            }
            XCTAssertEqual(events, [control ? .control(message) : .message(message)], "message of \(size) bytes")
        }
    }

    func testFramedSealRefusesAsSealDoes() throws {
        var (_, master) = try establishedPair(options: SecureLinkOptions(maxMessageBytes: 1_000))
        XCTAssertLinkError(.messageTooLarge, try master.seal(Array(repeating: 1, count: 1_001), frameHeader: binaryHeader))
        XCTAssertEqual(master.phase, .established)
        var responder = SecureLink.knownResponder(keys: [masterKey])
        XCTAssertLinkError(.wrongState, try responder.seal([1], frameHeader: binaryHeader))
    }
}
