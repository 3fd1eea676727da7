import XCTest

@testable import WebSocket

final class FrameEncoderTests: XCTestCase {
    func testRFCMaskedHello() {
        let bytes = FrameEncoder.encode(
            Frame(opcode: .text, payload: Array("Hello".utf8)),
            maskingKey: MaskingKey(0x37, 0xFA, 0x21, 0x3D))
        XCTAssertEqual(bytes, [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58])
    }

    func testRFCFragmentsAndPing() {
        XCTAssertEqual(
            FrameEncoder.encode(Frame(fin: false, opcode: .text, payload: Array("Hel".utf8)), maskingKey: nil),
            [0x01, 0x03, 0x48, 0x65, 0x6C])
        XCTAssertEqual(
            FrameEncoder.encode(Frame(opcode: .continuation, payload: Array("lo".utf8)), maskingKey: nil),
            [0x80, 0x02, 0x6C, 0x6F])
        XCTAssertEqual(
            FrameEncoder.encode(Frame(opcode: .ping, payload: Array("Hello".utf8)), maskingKey: nil),
            [0x89, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F])
    }

    func testLengthBoundaries() {
        for (length, headerSize) in [(0, 2), (125, 2), (126, 4), (65535, 4), (65536, 10)] {
            let frame = Frame(opcode: .binary, payload: Array(repeating: 0xAB, count: length))
            XCTAssertEqual(FrameEncoder.encode(frame, maskingKey: nil).count, headerSize + length)
            XCTAssertEqual(FrameEncoder.headerSize(payloadLength: length, masked: true), headerSize + 4)
        }
    }

    func testRoundTripsBothDirectionsWithRandomKeysAndLengths() {
        var generator = SplitMix64(seed: 42)
        for _ in 0..<200 {
            let length = [0, 1, 3, 7, 8, 9, 125, 126, 127, 1000, 65535, 65536, 70001].randomElement(using: &generator)!
            let payload = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let opcode: Opcode = [.text, .binary, .continuation].randomElement(using: &generator)!
            let frame = Frame(fin: Bool.random(using: &generator), opcode: opcode, payload: payload)
            let key = MaskingKey(UInt32.random(in: .min ... .max, using: &generator))

            let masked = FrameEncoder.encode(frame, maskingKey: key)
            var serverSide = FrameParser(role: .server, configuration: WebSocketConfiguration(maxMessageSize: 1 << 20))
            serverSide.append(masked)
            // A lone continuation is a sequence error; check the framing with a preceding frame.
            if opcode == .continuation {
                var parser = FrameParser(role: .server)
                parser.append(FrameEncoder.encode(Frame(fin: false, opcode: .binary), maskingKey: key) + masked)
                XCTAssertEqual(try parser.next(), Frame(fin: false, opcode: .binary))
                XCTAssertEqual(try parser.next(), frame)
            } else {
                XCTAssertEqual(try serverSide.next(), frame)
                if length > 0 {
                    XCTAssertNotEqual(Array(masked.suffix(length)), payload, "payload must be masked on the wire")
                }
            }
            let unmasked = FrameEncoder.encode(Frame(opcode: .binary, payload: payload), maskingKey: nil)
            var clientSide = FrameParser(role: .client)
            clientSide.append(unmasked)
            XCTAssertEqual(try clientSide.next(), Frame(opcode: .binary, payload: payload))
        }
    }

    func testMaskingKeyApplyMatchesTheDefinitionAtEveryOffset() {
        let key = MaskingKey(0x01, 0x23, 0x45, 0x67)
        let keyBytes: [UInt8] = [0x01, 0x23, 0x45, 0x67]
        let original = (0..<53).map { UInt8($0) }
        for offset in 0..<8 {
            var data = original
            data.withUnsafeMutableBytes { key.apply(to: $0, payloadOffset: offset) }
            let expected = original.enumerated().map { $0.element ^ keyBytes[($0.offset + offset) % 4] }
            XCTAssertEqual(data, expected, "offset \(offset)")
        }
        XCTAssertEqual(MaskingKey(0x3721_FA3D), MaskingKey(0x37, 0x21, 0xFA, 0x3D))
    }
}
