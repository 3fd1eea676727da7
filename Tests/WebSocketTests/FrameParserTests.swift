import XCTest

@testable import WebSocket

final class FrameParserTests: XCTestCase {
    // RFC 6455 5.7 examples.
    private let unmaskedHello: [UInt8] = [0x81, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F]
    private let maskedHello: [UInt8] = [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]
    private let fragmentHel: [UInt8] = [0x01, 0x03, 0x48, 0x65, 0x6C]
    private let fragmentLo: [UInt8] = [0x80, 0x02, 0x6C, 0x6F]
    private let unmaskedPing: [UInt8] = [0x89, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F]
    private let maskedPong: [UInt8] = [0x8A, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]

    private func assertParses(
        _ pieces: [[UInt8]], role: WebSocketRole, as expected: [Frame],
        file: StaticString = #filePath, line: UInt = #line
    ) {
        for (name, chunks) in chunkings(of: pieces) {
            let result = parseFrames(chunks, role: role)
            XCTAssertNil(result.error, name, file: file, line: line)
            XCTAssertEqual(result.frames, expected, name, file: file, line: line)
        }
    }

    private func assertFails(
        _ pieces: [[UInt8]], role: WebSocketRole = .server,
        configuration: WebSocketConfiguration = WebSocketConfiguration(),
        with code: WebSocketError.Code, closeCode: CloseCode, framesBefore: Int = 0,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        for (name, chunks) in chunkings(of: pieces) {
            let result = parseFrames(chunks, role: role, configuration: configuration)
            XCTAssertEqual(result.error?.code, code, name, file: file, line: line)
            XCTAssertEqual(result.error?.closeCode, closeCode, name, file: file, line: line)
            XCTAssertEqual(result.frames.count, framesBefore, name, file: file, line: line)
        }
    }

    func testRFCSingleFrameUnmaskedText() {
        assertParses([unmaskedHello], role: .client, as: [Frame(opcode: .text, payload: Array("Hello".utf8))])
    }

    func testRFCSingleFrameMaskedText() {
        assertParses([maskedHello], role: .server, as: [Frame(opcode: .text, payload: Array("Hello".utf8))])
    }

    func testRFCFragmentedUnmaskedText() {
        assertParses(
            [fragmentHel, fragmentLo], role: .client,
            as: [
                Frame(fin: false, opcode: .text, payload: Array("Hel".utf8)),
                Frame(opcode: .continuation, payload: Array("lo".utf8)),
            ])
    }

    func testRFCPingAndMaskedPong() {
        assertParses([unmaskedPing], role: .client, as: [Frame(opcode: .ping, payload: Array("Hello".utf8))])
        assertParses([maskedPong], role: .server, as: [Frame(opcode: .pong, payload: Array("Hello".utf8))])
    }

    func testRFC256ByteBinaryUses16BitLength() {
        let payload = (0..<256).map { UInt8(truncatingIfNeeded: $0) }
        let bytes: [UInt8] = [0x82, 0x7E, 0x01, 0x00] + payload
        XCTAssertEqual(FrameEncoder.encode(Frame(opcode: .binary, payload: payload), maskingKey: nil), bytes)
        assertParses([bytes], role: .client, as: [Frame(opcode: .binary, payload: payload)])
    }

    func testRFC64KiBBinaryUses64BitLength() {
        let payload = (0..<65536).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let bytes: [UInt8] = [0x82, 0x7F, 0, 0, 0, 0, 0, 1, 0, 0] + payload
        XCTAssertEqual(FrameEncoder.encode(Frame(opcode: .binary, payload: payload), maskingKey: nil), bytes)
        // One byte at a time over 64 KiB is slow in debug builds; whole and random chunks cover it.
        XCTAssertEqual(parseFrames([bytes], role: .client).frames, [Frame(opcode: .binary, payload: payload)])
        var chunks: [[UInt8]] = []
        var index = 0
        while index < bytes.count {
            chunks.append(Array(bytes[index..<min(bytes.count, index + 997)]))
            index += 997
        }
        XCTAssertEqual(parseFrames(chunks, role: .client).frames, [Frame(opcode: .binary, payload: payload)])
    }

    func testSeveralFramesInOneBufferAndPendingHeader() {
        var parser = FrameParser(role: .client)
        parser.append(unmaskedHello + unmaskedPing + Array(fragmentHel.prefix(3)))
        XCTAssertEqual(try parser.next()?.opcode, .text)
        XCTAssertEqual(try parser.next()?.opcode, .ping)
        XCTAssertNil(try parser.next())
        XCTAssertEqual(parser.pendingHeader?.opcode, .text)
        XCTAssertEqual(parser.pendingHeader?.payloadLength, 3)
        XCTAssertEqual(Array(parser.pendingPayload), [0x48])
        parser.append(Array(fragmentHel.suffix(2)))
        XCTAssertEqual(try parser.next(), Frame(fin: false, opcode: .text, payload: Array("Hel".utf8)))
        XCTAssertTrue(parser.isInFragmentedMessage)
    }

    func testMaskingDirection() {
        // 5.1: a server must refuse unmasked frames, a client masked ones; both with 1002.
        assertFails([unmaskedHello], role: .server, with: .unmaskedFrame, closeCode: .protocolError)
        assertFails([maskedHello], role: .client, with: .maskedFrame, closeCode: .protocolError)
    }

    func testReservedBitsAndOpcodes() {
        for bits: UInt8 in [0x40, 0x20, 0x10, 0x70] {
            assertFails([[0x81 | bits, 0x80, 1, 2, 3, 4]], with: .reservedBitsSet, closeCode: .protocolError)
        }
        for opcode: UInt8 in [3, 4, 5, 6, 7, 0xB, 0xC, 0xD, 0xE, 0xF] {
            assertFails([[0x80 | opcode, 0x80, 1, 2, 3, 4]], with: .reservedOpcode, closeCode: .protocolError)
        }
    }

    func testControlFrameRules() {
        // Detected from the first two bytes, before any length or payload arrives.
        assertFails([[0x89, 0xFE]], with: .controlFrameTooLong, closeCode: .protocolError)
        assertFails([[0x88, 0xFF]], with: .controlFrameTooLong, closeCode: .protocolError)
        assertFails([[0x09, 0x80]], with: .fragmentedControlFrame, closeCode: .protocolError)
        // 125 bytes is allowed.
        let ping = clientFrame(.ping, Array(repeating: 0x61, count: 125))
        XCTAssertEqual(parseFrames([ping], role: .server).frames.first?.payload.count, 125)
    }

    func testLengthEncodingRules() {
        // 64-bit length with the most significant bit set.
        assertFails([[0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 0]], with: .invalidLength, closeCode: .protocolError)
        // Non-minimal 16-bit and 64-bit lengths.
        assertFails([[0x82, 0xFE, 0x00, 0x7D]], with: .nonMinimalLength, closeCode: .protocolError)
        assertFails([[0x82, 0xFF, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF]], with: .nonMinimalLength, closeCode: .protocolError)
    }

    func testFragmentationSequenceRules() {
        assertFails([clientFrame(.continuation, [1])], with: .unexpectedContinuation, closeCode: .protocolError)
        assertFails(
            [clientFrame(.text, [0x61], fin: false), clientFrame(.binary, [1])],
            with: .expectedContinuation, closeCode: .protocolError, framesBefore: 1)
        // A control frame between fragments is fine.
        let pieces = [clientFrame(.text, [0x61], fin: false), clientFrame(.ping, [9]), clientFrame(.continuation, [0x62])]
        assertParses(
            pieces, role: .server,
            as: [
                Frame(fin: false, opcode: .text, payload: [0x61]),
                Frame(opcode: .ping, payload: [9]),
                Frame(opcode: .continuation, payload: [0x62]),
            ])
    }

    func testMessageSizeLimitIsCheckedFromTheHeaderAlone() {
        let configuration = WebSocketConfiguration(maxMessageSize: 100)
        // Only the header of a 101-byte frame: no payload needed to refuse it.
        assertFails([[0x82, 0xE5, 1, 2, 3, 4]], configuration: configuration, with: .messageTooBig, closeCode: .messageTooBig)
        // A huge declared 64-bit length fails before anything is reserved.
        assertFails(
            [[0x82, 0xFF, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]],
            with: .messageTooBig, closeCode: .messageTooBig)
        // Two fragments of 60 bytes: the second header overflows the message.
        let first = clientFrame(.binary, Array(repeating: 1, count: 60), fin: false)
        let second = Array(clientFrame(.continuation, Array(repeating: 2, count: 60)).prefix(6))
        assertFails(
            [first, second], configuration: configuration, with: .messageTooBig,
            closeCode: .messageTooBig, framesBefore: 1)
        // Exactly at the limit is accepted.
        let exact = clientFrame(.binary, Array(repeating: 1, count: 100))
        XCTAssertNil(parseFrames([exact], role: .server, configuration: configuration).error)
    }

    func testFrameSizeLimit() {
        let configuration = WebSocketConfiguration(maxMessageSize: 1000, maxFrameSize: 10)
        assertFails(
            [clientFrame(.binary, Array(repeating: 0, count: 11))], configuration: configuration,
            with: .frameTooBig, closeCode: .messageTooBig)
    }

    func testFragmentCountLimit() {
        let configuration = WebSocketConfiguration(maxFragments: 3)
        let ok = [
            clientFrame(.text, [0x61], fin: false), clientFrame(.continuation, [0x61], fin: false),
            clientFrame(.continuation, [0x61]),
        ]
        XCTAssertNil(parseFrames(ok, role: .server, configuration: configuration).error)
        let tooMany = [
            clientFrame(.text, [0x61], fin: false), clientFrame(.continuation, [0x61], fin: false),
            clientFrame(.continuation, [0x61], fin: false), clientFrame(.continuation, [0x61]),
        ]
        assertFails(
            tooMany, configuration: configuration, with: .tooManyFragments,
            closeCode: .messageTooBig, framesBefore: 3)
    }

    func testErrorIsStickyAndLaterInputIgnored() {
        var parser = FrameParser(role: .server)
        parser.append(unmaskedHello)
        XCTAssertThrowsError(try parser.next())
        parser.append(maskedHello)
        XCTAssertThrowsError(try parser.next()) { error in
            XCTAssertEqual((error as? WebSocketError)?.code, .unmaskedFrame)
        }
    }

    func testZeroLengthFrames() {
        assertParses(
            [serverFrame(.text, []), serverFrame(.ping, [])], role: .client,
            as: [Frame(opcode: .text), Frame(opcode: .ping)])
        assertParses([clientFrame(.binary, [])], role: .server, as: [Frame(opcode: .binary)])
    }
}
