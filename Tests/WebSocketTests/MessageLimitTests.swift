import XCTest

@testable import WebSocket

/// The message limit a server lowers before the peer authenticates and raises afterwards: a
/// frame whose header announces more than the limit in force fails the connection (1009)
/// before any of its payload is buffered.
final class MessageLimitTests: XCTestCase {
    /// The header (with mask) of a client binary frame announcing `length` bytes, no payload.
    private func announcing(_ length: Int) -> [UInt8] {
        var header: [UInt8] = [0x82]
        if length < 126 {
            header.append(0x80 | UInt8(length))
        } else if length <= 0xFFFF {
            header += [0x80 | 126, UInt8(length >> 8), UInt8(length & 0xFF)]
        } else {
            header.append(0x80 | 127)
            for shift in stride(from: 56, through: 0, by: -8) { header.append(UInt8((length >> shift) & 0xFF)) }
        }
        return header + [0x37, 0xFA, 0x21, 0x3D]
    }

    func testAHeaderAnnouncingMoreThanTheLimitFailsBeforeItsPayload() {
        var parser = FrameParser(role: .server)
        parser.setMessageLimit(1024)
        // Only the 14 header bytes of a 1 MiB frame: refused at once, nothing reserved for it.
        parser.append(announcing(1 << 20))
        XCTAssertThrowsError(try parser.next()) { error in
            XCTAssertEqual((error as? WebSocketError)?.code, .messageTooBig)
            XCTAssertEqual((error as? WebSocketError)?.closeCode, CloseCode(1009))
        }
        XCTAssertNil(parser.pendingHeader)
        XCTAssertEqual(parser.buffer.capacity, 0, "the buffered header is released")
    }

    func testTheLimitIsCheckedWhateverTheChunking() {
        let big = clientFrame(.binary, [UInt8](repeating: 7, count: 1025))
        for (name, chunks) in chunkings(of: [big]) {
            var parser = FrameParser(role: .server)
            parser.setMessageLimit(1024)
            var failure: WebSocketError?
            var payloadSeen = 0
            for chunk in chunks where failure == nil {
                parser.append(chunk)
                do {
                    _ = try parser.next()
                    payloadSeen = max(payloadSeen, parser.pendingPayload.count)
                } catch {
                    failure = error as? WebSocketError
                }
            }
            XCTAssertEqual(failure?.code, .messageTooBig, name)
            XCTAssertEqual(payloadSeen, 0, "\(name): no payload byte was taken")
        }
    }

    func testAHandshakeSizedMessagePassesAndTheRaisedLimitTakesLargerOnes() {
        var connection = WebSocketConnection(role: .server)
        connection.setMessageLimit(1024)
        let first = [UInt8](repeating: 1, count: 96) // IK's first message
        XCTAssertEqual(connection.receive(clientFrame(.binary, first)), [.binary(first)])
        connection.setMessageLimit(1 << 20)
        XCTAssertEqual(connection.configuration.maxMessageSize, 1 << 20)
        let large = [UInt8](repeating: 2, count: 200_000)
        XCTAssertEqual(connection.receive(clientFrame(.binary, large)), [.binary(large)])
    }

    func testOverTheLimitTheConnectionClosesWith1009() {
        var connection = WebSocketConnection(role: .server)
        connection.setMessageLimit(1024)
        let events = connection.receive(announcing(1 << 20))
        XCTAssertEqual(events.count, 2, "\(events)")
        XCTAssertEqual(events.first?.sentBytes.flatMap { closeCode(in: $0, sentBy: .server) }, 1009)
        XCTAssertEqual(events.last?.failure?.code, .messageTooBig)
        XCTAssertEqual(connection.state, .closed)
    }

    func testFragmentsAddUpAgainstTheLimit() {
        var connection = WebSocketConnection(role: .server)
        connection.setMessageLimit(1024)
        let events = feed(
            &connection,
            [
                clientFrame(.binary, [UInt8](repeating: 1, count: 600), fin: false),
                // A final continuation frame of 600 more bytes: 1,200 in all.
                [0x80] + announcing(600).dropFirst(),
            ])
        XCTAssertEqual(events.last?.failure?.code, .messageTooBig, "\(events)")
    }
}
