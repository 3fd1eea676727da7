import XCTest

@testable import WebSocket

/// Seeded random mutations of valid traffic: nothing traps, and the events do not depend on how
/// the bytes were split into reads.
final class RobustnessTests: XCTestCase {
    private func validStream(role sender: WebSocketRole, using generator: inout SplitMix64) -> [UInt8] {
        let frame = sender == .client ? clientFrame : serverFrame
        var bytes: [UInt8] = []
        for _ in 0..<Int.random(in: 1...6, using: &generator) {
            switch Int.random(in: 0..<6, using: &generator) {
            case 0: bytes += frame(.text, Array("κόσμε order".utf8), true)
            case 1: bytes += frame(.binary, (0..<Int.random(in: 0...300, using: &generator)).map { UInt8(truncatingIfNeeded: $0) }, true)
            case 2:
                bytes += frame(.text, Array("frag".utf8), false) + frame(.ping, [1], true) + frame(.continuation, Array("ment".utf8), true)
            case 3: bytes += frame(.ping, Array("hb".utf8), true)
            case 4: bytes += frame(.close, closePayload(1000, "bye"), true)
            default: bytes += frame(.pong, [], true)
            }
        }
        return bytes
    }

    func testMutatedStreamsGiveTheSameEventsForEveryChunking() {
        var generator = SplitMix64(seed: 2024)
        for iteration in 0..<1500 {
            let receiver: WebSocketRole = iteration % 2 == 0 ? .server : .client
            var bytes = validStream(role: receiver == .server ? .client : .server, using: &generator)
            for _ in 0..<Int.random(in: 0...3, using: &generator) {
                let index = Int.random(in: 0..<bytes.count, using: &generator)
                bytes[index] = UInt8.random(in: 0...255, using: &generator)
            }
            if Bool.random(using: &generator) {
                bytes.removeLast(Int.random(in: 0...min(8, bytes.count), using: &generator))
            }
            let configuration = WebSocketConfiguration(maxMessageSize: 4096, maxFragments: 8)
            var results: [[WebSocketEvent]] = []
            for (_, chunks) in chunkings(of: [bytes], seed: UInt64(iteration)).dropFirst() {
                var connection = WebSocketConnection(
                    role: receiver, configuration: configuration,
                    maskingKeySource: { 0x0BAD_F00D })
                results.append(feed(&connection, chunks))
            }
            XCTAssertEqual(results[0], results[1], "iteration \(iteration): one buffer vs one byte")
            XCTAssertEqual(results[0], results[2], "iteration \(iteration): one buffer vs random chunks")
        }
    }

    func testMutatedHandshakesAlwaysReachAVerdict() {
        var generator = SplitMix64(seed: 99)
        let base = ClientHandshake(
            host: "127.0.0.1:8080", path: "/", key: "dGhlIHNhbXBsZSBub25jZQ==",
            subprotocols: ["chat"]
        ).requestBytes
        var verdicts = 0
        for _ in 0..<2000 {
            var bytes = base
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            var whole = ServerHandshakeParser()
            switch whole.parse(bytes) {
            case .accepted(_, let consumed):
                XCTAssertLessThanOrEqual(consumed, bytes.count)
                verdicts += 1
            case .rejected(let rejection):
                XCTAssertTrue([400, 405, 426, 431, 505].contains(rejection.status), "\(rejection)")
                verdicts += 1
            case .incomplete:
                // The mutation broke the final CRLF CRLF: more input is legitimately awaited.
                let terminator: [UInt8] = [13, 10, 13, 10]
                XCTAssertFalse(bytes.indices.dropLast(3).contains { bytes[$0..<($0 + 4)].elementsEqual(terminator) })
            }
        }
        XCTAssertGreaterThan(verdicts, 1000)
    }
}
