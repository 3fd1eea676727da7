import EventLoopIO
import WebSocket
import WebSocketTransport
import XCTest

/// The frame deadline bounds a stalled message, never a steady stream of them.
final class WebSocketFrameDeadlineTests: XCTestCase {
    func testAStreamOfMessagesWhoseReadsAllEndMidFrameIsNotAStall() throws {
        // Every write ends four bytes into the next frame, so no read ever ends on a frame
        // boundary; the writes go on for five frame deadlines (200 ms), each message completing
        // well within its own.
        let loop = try EventLoop()
        let server = try TestServer(loop: loop, configuration: quickConfiguration())
        let raw = try RawClient(loop: loop, port: server.port)
        let count = 20
        let frames = (0..<count).map { RawClient.frame(.text, Array("message \($0)".utf8)) }
        raw.channel.write(raw.request + Array(frames[0].prefix(4)))
        var next = 0
        func writeNext() {
            let rest = Array(frames[next].dropFirst(4))
            next += 1
            raw.channel.write(rest + (next < count ? Array(frames[next].prefix(4)) : []))
            if next < count { _ = loop.schedule(after: .milliseconds(50)) { writeNext() } }
        }
        _ = loop.schedule(after: .milliseconds(50)) { writeNext() }
        server.onEvent = { event, _ in
            if case .text("message \(count - 1)") = event { loop.stop() }
            if case .ended = event { loop.stop() }
        }
        runLoop(loop)
        server.close()
        let texts = server.events.compactMap { event -> String? in
            if case .text(let text) = event { return text }
            return nil
        }
        XCTAssertEqual(texts, (0..<count).map { "message \($0)" })
        XCTAssertNil(server.ending, "the link was ended: \(String(describing: server.ending))")
    }
}
