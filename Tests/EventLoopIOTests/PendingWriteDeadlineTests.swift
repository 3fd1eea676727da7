import Foundation
import Glibc
import XCTest

@testable import EventLoopIO

/// An answer waiting on an open channel (a keep-alive local API connection) is bounded as a
/// close after flush is, when the owner asks (`boundsPendingWrites`): cut once the socket took
/// no byte for `closeTimeout`, or once bytes waited `closeLimit` in all; a reader that takes the
/// answer steadily gets it and keeps its connection.
final class PendingWriteDeadlineTests: XCTestCase {
    /// What one answer on an open channel did.
    private struct Outcome {
        var reasons: [StreamChannel.CloseReason] = []
        /// When the server's channel closed, from the write.
        var closedAfter: Duration?
        var received = 0
        var lastReadAfter: Duration?
    }

    /// Writes `answer` on an open channel (`configure` sets its bounds) to a reader on the same
    /// loop that takes `chunk` bytes each `interval`, for at most `reads` reads; runs until the
    /// server's channel closed, or for `watch` after the reader had everything or stopped.
    private func serve(
        _ answer: [UInt8], chunk: Int, interval: Duration, reads: Int = .max, watch: Duration = .milliseconds(700),
        configure: @escaping (StreamChannel) -> Void
    ) throws -> Outcome {
        let loop = try EventLoop()
        let path = temporaryDirectory(self) + "/api.sock"
        var outcome = Outcome()
        var start = loop.now
        var server: StreamChannel?
        let acceptor = try Acceptor(listener: try UnixListener.bind(path: path), loop: loop) { accepted in
            do {
                let channel = try StreamChannel(socket: accepted.socket, loop: loop)
                server = channel
                configure(channel)
                channel.onClose = { reason in
                    outcome.reasons.append(reason)
                    outcome.closedAfter = loop.now - start
                    loop.stop()
                }
                start = loop.now
                channel.write(answer)
            } catch {
                XCTFail("adopting an accepted socket failed: \(error)")
            }
        }
        let reader = try UnixSocket.connectBlocking(path: path)
        try reader.setNonBlocking(true)
        var buffer = [UInt8](repeating: 0, count: chunk)
        var left = reads
        func readSome() {
            if left == 0 || outcome.received == answer.count {
                _ = loop.schedule(after: watch) { loop.stop() }
                return
            }
            left -= 1
            let n = buffer.withUnsafeMutableBytes { recv(reader.descriptor, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                outcome.received += n
                outcome.lastReadAfter = loop.now - start
            }
            _ = loop.schedule(after: interval) { readSome() }
        }
        _ = loop.schedule(after: interval) { readSome() }
        runLoop(loop, timeoutSeconds: 20)
        server?.close()
        reader.close()
        acceptor.close()
        return outcome
    }

    func testAReaderThatStopsTakingAnAnswerOnAnOpenChannelIsCut() throws {
        let answer = pattern(count: 4 << 20, seed: 1)
        let timeout = Duration.milliseconds(300)
        // It reads for about 0.3 s, then stops but keeps the connection open.
        let outcome = try serve(answer, chunk: 64 << 10, interval: .milliseconds(20), reads: 15, watch: .seconds(3)) {
            $0.boundsPendingWrites = true
            $0.closeTimeout = timeout
        }
        XCTAssertEqual(outcome.reasons, [.error(PosixError(call: "write (no byte taken)", errno: ETIMEDOUT))])
        XCTAssertLessThan(outcome.received, answer.count)
        let closed = try XCTUnwrap(outcome.closedAfter)
        let lastRead = try XCTUnwrap(outcome.lastReadAfter)
        XCTAssertGreaterThanOrEqual(closed - lastRead, timeout, "cut only after a timeout without a byte taken")
        XCTAssertLessThan(closed - lastRead, .seconds(2), "cut after the timeout, not at the limit")
    }

    func testATricklingReaderOnAnOpenChannelIsCutAtTheLimit() throws {
        let answer = pattern(count: 4 << 20, seed: 2)
        let limit = Duration.milliseconds(800)
        // 16 KiB every 10 ms: progress well within each timeout, but 4 MiB would take 2.6 s.
        let outcome = try serve(answer, chunk: 16 << 10, interval: .milliseconds(10)) {
            $0.boundsPendingWrites = true
            $0.closeTimeout = .milliseconds(300)
            $0.closeLimit = limit
        }
        XCTAssertEqual(outcome.reasons, [.error(PosixError(call: "write (its limit)", errno: ETIMEDOUT))])
        XCTAssertLessThan(outcome.received, answer.count)
        let closed = try XCTUnwrap(outcome.closedAfter)
        XCTAssertGreaterThanOrEqual(closed, limit)
        XCTAssertLessThan(closed, .milliseconds(2400), "the limit ended it, not the end of the answer")
    }

    func testASteadyReaderGetsTheWholeAnswerAndKeepsItsConnection() throws {
        let answer = pattern(count: 4 << 20, seed: 3)
        let timeout = Duration.milliseconds(200)
        // 128 KiB every 20 ms: the answer takes about 0.65 s, over three timeouts.
        let outcome = try serve(answer, chunk: 128 << 10, interval: .milliseconds(20)) {
            $0.boundsPendingWrites = true
            $0.closeTimeout = timeout
        }
        XCTAssertEqual(outcome.received, answer.count)
        XCTAssertEqual(outcome.reasons, [], "the connection stays open once the answer is taken")
        XCTAssertGreaterThan(try XCTUnwrap(outcome.lastReadAfter), timeout * 2)
    }

    func testWithoutTheBoundAStoppedReaderKeepsTheChannel() throws {
        let answer = pattern(count: 4 << 20, seed: 4)
        let outcome = try serve(answer, chunk: 64 << 10, interval: .milliseconds(20), reads: 5, watch: .seconds(1)) {
            $0.closeTimeout = .milliseconds(200)
        }
        XCTAssertEqual(outcome.reasons, [], "a WebSocket link (its own heartbeat) is not cut by this bound")
        XCTAssertLessThan(outcome.received, answer.count)
    }
}
