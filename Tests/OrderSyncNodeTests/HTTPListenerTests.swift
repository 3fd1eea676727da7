import EventLoopIO
import HTTP1
import XCTest

@testable import NodePolicy
@testable import OrderSyncNode

/// An `HTTPListener` on loopback with short limits, clients on the same loop: a kept-alive
/// connection is closed after its idle time, half a request head after the head deadline,
/// and connections past an address's cap at once.
final class HTTPListenerTests: XCTestCase {
    private let limits = HTTPListenerLimits(
        maxConnections: 8, maxConnectionsPerAddress: 2, headTimeout: .milliseconds(300), idleTimeout: .milliseconds(600))

    private struct Closed {
        var after: Duration
        var answer: String
    }

    /// Connects, writes `request`, and reports how long after the write the listener closed
    /// the connection and what it answered.
    private func client(
        _ loop: EventLoop, port: UInt16, request: String, done: @escaping (Closed) -> Void
    ) throws {
        var answer: [UInt8] = []
        let start = loop.now
        let channel = try StreamChannel.connecting(try TCPSocket.connect(host: "127.0.0.1", port: port), loop: loop) { _ in }
        if !request.isEmpty { channel.write(Array(request.utf8)) }
        channel.onRead = { answer += $0 }
        channel.onClose = { _ in done(Closed(after: loop.now - start, answer: String(decoding: answer, as: UTF8.self))) }
    }

    private func listener(_ loop: EventLoop, refusals: @escaping (String) -> Void) throws -> HTTPListener {
        let listener = try HTTPListener(
            listener: try HTTPListener.bind(MetricsAddress(host: "127.0.0.1", port: 0), flag: "--test", purpose: "tests"),
            requestLimits: .init(maxHeaderBytes: 1024, maxBodyBytes: 0), limits: limits, loop: loop,
            acceptFailed: { XCTFail("accept failed: \($0)") }, refused: { _, reason, _ in refusals(reason) })
        listener.start { _, _ in .response(HTTPListener.plain(200, "ok\n")) }
        return listener
    }

    func testIdleHeadAndPerAddressDeadlinesOnRealSockets() throws {
        let loop = try EventLoop()
        var refusals: [String] = []
        let listener = try listener(loop) { refusals.append($0) }
        let port = UInt16(listener.localAddress.split(separator: ":").last!)!
        var results: [String: Closed] = [:]
        func finished(_ name: String) -> (Closed) -> Void {
            { closed in
                results[name] = closed
                if results.count == 2 { loop.stop() }
            }
        }
        // Kept alive after its answer, then idle.
        try client(loop, port: port, request: "GET /a HTTP/1.1\r\nHost: t\r\n\r\n", done: finished("idle"))
        // Half a head, never finished.
        try client(loop, port: port, request: "GET /b HTTP/1.1\r\nHost: t\r\n", done: finished("half"))
        let watchdog = loop.schedule(after: .seconds(5)) { loop.stop() }
        loop.run()
        loop.cancel(watchdog)
        let idle = try XCTUnwrap(results["idle"])
        XCTAssertTrue(idle.answer.hasPrefix("HTTP/1.1 200"), idle.answer)
        XCTAssertGreaterThanOrEqual(idle.after, .milliseconds(550))
        XCTAssertLessThan(idle.after, .milliseconds(1500))
        let half = try XCTUnwrap(results["half"])
        XCTAssertEqual(half.answer, "", "half a head is closed without an answer")
        XCTAssertGreaterThanOrEqual(half.after, .milliseconds(250))
        XCTAssertLessThan(half.after, .milliseconds(550), "the head deadline, not the idle one")
        XCTAssertEqual(refusals, [], "two connections from one address are within its cap")
        XCTAssertEqual(listener.connectionCount, 0)
        listener.stop()
    }

    func testAConnectionPastTheAddressCapIsClosedAtOnce() throws {
        let loop = try EventLoop()
        var refusals: [String] = []
        let listener = try listener(loop) { refusals.append($0) }
        let port = UInt16(listener.localAddress.split(separator: ":").last!)!
        var closed: [Duration] = []
        for _ in 0..<3 {
            try client(loop, port: port, request: "") { c in
                closed.append(c.after)
                if closed.count == 1 { loop.stop() }
            }
        }
        let watchdog = loop.schedule(after: .seconds(5)) { loop.stop() }
        loop.run()
        loop.cancel(watchdog)
        XCTAssertEqual(closed.count, 1)
        XCTAssertLessThan(closed.first ?? .seconds(9), .milliseconds(200), "closed at accept, not at the head deadline")
        XCTAssertEqual(refusals, ["2 connections from 127.0.0.1 open (limit 2)"])
        XCTAssertEqual(listener.connectionCount, 2)
        listener.stop()
    }
}
