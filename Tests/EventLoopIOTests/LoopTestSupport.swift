import EventLoopIO
import Glibc
import XCTest

/// Runs `loop` until something stops it, failing the test if that takes longer than `seconds`.
func runLoop(_ loop: EventLoop, timeoutSeconds: Int64 = 10, file: StaticString = #filePath, line: UInt = #line) {
    var timedOut = false
    let watchdog = loop.schedule(after: .seconds(timeoutSeconds)) {
        timedOut = true
        loop.stop()
    }
    loop.run()
    loop.cancel(watchdog)
    XCTAssertFalse(timedOut, "event loop did not finish within \(timeoutSeconds) s", file: file, line: line)
}

/// A byte pattern that makes reordering or loss visible.
func pattern(count: Int, seed: Int = 0) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: ($0 &+ seed) % 251) }
}

/// A free TCP port on 127.0.0.1 with nothing listening on it any more.
func closedPort() throws -> UInt16 {
    let listener = try TCPListener.bind(host: "127.0.0.1", port: 0)
    let port = listener.localPort
    listener.close()
    return port
}

/// A fresh temporary directory, removed at the end of the test.
func temporaryDirectory(_ test: XCTestCase) -> String {
    var template = Array("/tmp/posix-tests-XXXXXX".utf8CString)
    let path = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    test.addTeardownBlock {
        _ = try? FileManager.default.removeItem(atPath: path)
    }
    return path
}

/// CPU time consumed by the calling thread, in milliseconds.
func threadCPUMilliseconds() -> Int64 {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return Int64(time.tv_sec) * 1000 + Int64(time.tv_nsec) / 1_000_000
}

/// A value shared with another thread; the test orders the accesses itself (through the
/// loop's `execute`/`stop`, which synchronize).
// @unchecked Sendable: tests touch `value` on the loop thread, and on the test thread only
// before `run()` or after it returned; the loop's inbox (a `Mutex`) orders the hand-overs.
final class Shared<Value>: @unchecked Sendable {
    var value: Value

    init(_ value: Value) {
        self.value = value
    }
}
