import Foundation
import Glibc
import XCTest

@testable import EventLoopIO

/// A close after flush gives up on a peer that stops reading (`closeTimeout` without a byte
/// taken) or reads a trickle (`closeLimit` in all), not on one that reads a long answer slowly
/// but steadily, nor when its own loop was busy: a local API client reading a page of 15 MB on
/// a busy till gets all of it.
final class CloseAfterFlushDeadlineTests: XCTestCase {
    /// What one close after flush did.
    private struct Outcome {
        var reasons: [StreamChannel.CloseReason] = []
        /// When the server's channel closed, from the start of the close.
        var closedAfter: Duration?
        var received = 0
        /// When the reader last got bytes, from the start of the close.
        var lastReadAfter: Duration?
        var readerSawEnd = false
    }

    /// Serves `answer` on a Unix socket with a close after flush (`configure` sets the
    /// deadlines) to a reader on the same loop that takes `chunk` bytes each `interval`, for at
    /// most `reads` reads (then it stops reading but keeps the connection open); runs until the
    /// server's channel closed and the reader saw the end or stopped.
    private func serve(
        _ answer: [UInt8], chunk: Int, interval: Duration, reads: Int = .max,
        configure: @escaping (StreamChannel) -> Void,
        whileClosing: @escaping (EventLoop) -> Void = { _ in }
    ) throws -> Outcome {
        let loop = try EventLoop()
        let path = temporaryDirectory(self) + "/api.sock"
        var outcome = Outcome()
        var start = loop.now
        var readerDone = false
        let acceptor = try Acceptor(listener: try UnixListener.bind(path: path), loop: loop) { accepted in
            do {
                let server = try StreamChannel(socket: accepted.socket, loop: loop)
                configure(server)
                server.onClose = { reason in
                    outcome.reasons.append(reason)
                    outcome.closedAfter = loop.now - start
                    if readerDone { loop.stop() }
                }
                start = loop.now
                server.write(answer)
                server.closeAfterFlush()
                whileClosing(loop)
            } catch {
                XCTFail("adopting an accepted socket failed: \(error)")
            }
        }
        let reader = try UnixSocket.connectBlocking(path: path)
        try reader.setNonBlocking(true)
        var buffer = [UInt8](repeating: 0, count: chunk)
        var left = reads
        func finishReading() {
            readerDone = true
            if !outcome.reasons.isEmpty { loop.stop() }
        }
        func readSome() {
            let n = buffer.withUnsafeMutableBytes { recv(reader.descriptor, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                outcome.received += n
                outcome.lastReadAfter = loop.now - start
            }
            left -= 1
            if n == 0 || (n < 0 && errno != EAGAIN) {
                outcome.readerSawEnd = true
                return finishReading()
            }
            if left == 0 { return finishReading() }
            _ = loop.schedule(after: interval) { readSome() }
        }
        _ = loop.schedule(after: interval) { readSome() }
        runLoop(loop, timeoutSeconds: 20)
        reader.close()
        acceptor.close()
        return outcome
    }

    func testAReaderSlowerThanTheTimeoutButSteadyGetsTheWholeAnswer() throws {
        let answer = pattern(count: 4 << 20, seed: 5)
        let timeout = Duration.milliseconds(200)
        // 128 KiB every 20 ms: bytes leave the server well within the timeout each time, and the
        // whole answer takes about 0.65 s, over three times the timeout.
        let outcome = try serve(answer, chunk: 128 << 10, interval: .milliseconds(20)) { $0.closeTimeout = timeout }
        XCTAssertEqual(outcome.received, answer.count, "the whole answer reached the reader")
        XCTAssertTrue(outcome.readerSawEnd)
        XCTAssertEqual(outcome.reasons, [.localClose])
        XCTAssertGreaterThan(try XCTUnwrap(outcome.lastReadAfter), timeout * 2, "the answer took longer than the timeout")
    }

    func testAReaderThatStopsReadingIsCutOneTimeoutAfterItsLastRead() throws {
        let answer = pattern(count: 4 << 20, seed: 6)
        let timeout = Duration.milliseconds(200)
        // It reads for about 0.6 s (three timeouts), then stops but keeps the connection.
        let outcome = try serve(answer, chunk: 64 << 10, interval: .milliseconds(20), reads: 30) {
            $0.closeTimeout = timeout
        }
        XCTAssertEqual(outcome.reasons, [.error(PosixError(call: "closeAfterFlush", errno: ETIMEDOUT))])
        XCTAssertFalse(outcome.readerSawEnd)
        XCTAssertLessThan(outcome.received, answer.count)
        let lastRead = try XCTUnwrap(outcome.lastReadAfter)
        let closed = try XCTUnwrap(outcome.closedAfter)
        XCTAssertGreaterThan(lastRead, timeout * 2, "the reader was served past the first timeout")
        XCTAssertGreaterThanOrEqual(closed - lastRead, timeout, "cut only after a timeout without progress")
        XCTAssertLessThan(closed - lastRead, .seconds(5), "cut after the timeout, not at the limit")
    }

    func testATricklingReaderIsCutAtTheLimit() throws {
        let answer = pattern(count: 4 << 20, seed: 7)
        let limit = Duration.milliseconds(800)
        // 16 KiB every 10 ms: progress well within each timeout, but 4 MiB would take 2.6 s.
        let outcome = try serve(answer, chunk: 16 << 10, interval: .milliseconds(10)) {
            $0.closeTimeout = .milliseconds(200)
            $0.closeLimit = limit
        }
        XCTAssertEqual(outcome.reasons, [.error(PosixError(call: "closeAfterFlush (its limit)", errno: ETIMEDOUT))])
        XCTAssertLessThan(outcome.received, answer.count)
        let closed = try XCTUnwrap(outcome.closedAfter)
        XCTAssertGreaterThanOrEqual(closed, limit, "the reader kept reading: the limit ended it")
        XCTAssertLessThan(closed, .milliseconds(2400), "the limit ended it, not the end of the answer")
    }

    func testALoopBusyPastTheTimeoutDoesNotCutAReaderThatKeepsReading() throws {
        let answer = pattern(count: 4 << 20, seed: 8)
        let timeout = Duration.milliseconds(100)
        let path = temporaryDirectory(self) + "/api.sock"
        let loop = try EventLoop()
        let reasons = Shared<[StreamChannel.CloseReason]>([])
        let readerDone = Shared(false)
        var stalls = 0
        // The loop is held by a handler three times for three timeouts each, as a node's loop is
        // by a long piece of work; meanwhile the reader (on its own thread) empties the socket.
        func stall() {
            usleep(300_000)
            stalls += 1
            if stalls < 3 { _ = loop.schedule(after: .milliseconds(10)) { stall() } }
        }
        let acceptor = try Acceptor(listener: try UnixListener.bind(path: path), loop: loop) { accepted in
            do {
                let server = try StreamChannel(socket: accepted.socket, loop: loop)
                server.closeTimeout = timeout
                server.onClose = { reason in
                    reasons.value.append(reason)
                    if readerDone.value { loop.stop() }
                }
                server.write(answer)
                server.closeAfterFlush()
                loop.runSoon { stall() }
            } catch {
                XCTFail("adopting an accepted socket failed: \(error)")
            }
        }
        let received = Shared<[UInt8]>([])
        let readerError = Shared<Error?>(nil)
        let reader = Thread {
            defer {
                loop.execute {
                    readerDone.value = true
                    if !reasons.value.isEmpty { loop.stop() }
                }
            }
            do {
                let socket = try UnixSocket.connectBlocking(path: path)
                defer { socket.close() }
                received.value = try socket.readAll(timeout: .seconds(10))
            } catch {
                readerError.value = error
            }
        }
        reader.start()
        runLoop(loop, timeoutSeconds: 20)
        acceptor.close()
        XCTAssertNil(readerError.value)
        XCTAssertGreaterThanOrEqual(stalls, 1, "the loop was held past the timeout while sending")
        XCTAssertEqual(received.value.count, answer.count, "the whole answer reached the reader")
        XCTAssertTrue(received.value == answer)
        XCTAssertEqual(reasons.value, [.localClose])
    }

    func testTheDeadlineWaitsForProgressWithinTheLimit() {
        let start = MonotonicInstant.now
        var deadline = CloseDeadline(started: start, idleLimit: .seconds(5), totalLimit: .seconds(120))
        XCTAssertEqual(deadline.verdict(at: start + .seconds(4)), .wait(until: start + .seconds(5)))
        XCTAssertEqual(deadline.verdict(at: start + .seconds(5)), .idle)
        deadline.progressed(at: start + .seconds(4))
        XCTAssertEqual(deadline.verdict(at: start + .seconds(5)), .wait(until: start + .seconds(9)))
        // An older instant does not move the deadline back.
        deadline.progressed(at: start + .seconds(1))
        XCTAssertEqual(deadline.due, start + .seconds(9))
        deadline.progressed(at: start + .seconds(118))
        XCTAssertEqual(deadline.due, start + .seconds(120), "never past the limit")
        XCTAssertEqual(deadline.verdict(at: start + .seconds(120)), .overLimit)
    }
}
