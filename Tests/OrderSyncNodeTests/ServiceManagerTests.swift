import EventLoopIO
import Foundation
import Glibc
import Logging
import XCTest

@testable import OrderSyncNode

/// The notifications to systemd (sd_notify(3)) over a real datagram socket, on a real loop.
final class ServiceManagerTests: XCTestCase {
    /// A datagram socket bound to `name` in the abstract namespace (`@name` in NOTIFY_SOCKET).
    private func abstractReceiver(_ name: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        XCTAssertGreaterThanOrEqual(fd, 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(name.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw[0] = 0
            for (i, b) in bytes.enumerated() { raw[i + 1] = b }
        }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)! + 1 + bytes.count)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        XCTAssertEqual(bound, 0, String(cString: strerror(errno)))
        return fd
    }

    private func received(_ fd: Int32) -> [String] {
        var messages: [String] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return messages }
            messages.append(String(decoding: buffer[..<n], as: UTF8.self))
        }
    }

    func testReadyWatchdogAndStoppingReachAnAbstractSocket() throws {
        let name = "ordersync-test-\(UUID().uuidString)"
        let fd = try abstractReceiver(name)
        defer { close(fd) }
        let loop = try EventLoop()
        let manager = ServiceManager(
            loop: loop, logger: Logger(label: "test"), environment: ["NOTIFY_SOCKET": "@" + name, "WATCHDOG_USEC": "40000"])
        manager.startWatchdog()
        manager.readyAtTheLatest(after: .milliseconds(60)) { "not published yet" }
        loop.schedule(after: .milliseconds(150)) {
            manager.ready(status: "ignored: ready was sent")
            manager.stopping()
            loop.stop()
        }
        loop.run()
        let messages = received(fd)
        XCTAssertEqual(messages.filter { $0.hasPrefix("READY=1") }, ["READY=1\nSTATUS=not published yet"])
        // The watchdog keeps pinging while the loop runs (a late loop may ping after STOPPING):
        // STOPPING once, and after it nothing but pings.
        let stoppingAt = try XCTUnwrap(messages.firstIndex(of: "STOPPING=1\nSTATUS=stopping"), "\(messages)")
        XCTAssertEqual(messages.filter { $0.hasPrefix("STOPPING=") }.count, 1, "\(messages)")
        XCTAssertEqual(messages[(stoppingAt + 1)...].filter { $0 != "WATCHDOG=1" }, [], "\(messages)")
        let pings = messages.filter { $0 == "WATCHDOG=1" }.count
        XCTAssertGreaterThanOrEqual(pings, 3, "\(messages)")
        XCTAssertLessThanOrEqual(pings, 8, "every 20 ms for 150 ms")
    }

    func testReadyBeforeTheLimitCancelsIt() throws {
        let name = "ordersync-test-\(UUID().uuidString)"
        let fd = try abstractReceiver(name)
        defer { close(fd) }
        let loop = try EventLoop()
        let manager = ServiceManager(loop: loop, logger: Logger(label: "test"), environment: ["NOTIFY_SOCKET": "@" + name])
        manager.readyAtTheLatest(after: .milliseconds(20)) { "late" }
        manager.ready(status: "published")
        loop.schedule(after: .milliseconds(60)) { loop.stop() }
        loop.run()
        XCTAssertEqual(received(fd), ["READY=1\nSTATUS=published"])
    }

    func testTheWatchdogIntervalIsHalfOfWatchdogUsecForThisProcess() {
        XCTAssertEqual(ServiceManager.watchdogInterval(["WATCHDOG_USEC": "30000000"]), .seconds(15))
        XCTAssertEqual(ServiceManager.watchdogInterval(["WATCHDOG_USEC": "1000000", "WATCHDOG_PID": "\(getpid())"]), .milliseconds(500))
        XCTAssertNil(ServiceManager.watchdogInterval(["WATCHDOG_USEC": "1000000", "WATCHDOG_PID": "\(getpid() + 1)"]))
        XCTAssertNil(ServiceManager.watchdogInterval(["WATCHDOG_USEC": "0"]))
        XCTAssertNil(ServiceManager.watchdogInterval(["WATCHDOG_USEC": "soon"]))
        XCTAssertNil(ServiceManager.watchdogInterval([:]))
    }

    func testWithoutNotifySocketNothingIsSentOrScheduled() throws {
        let loop = try EventLoop()
        let manager = ServiceManager(loop: loop, logger: Logger(label: "test"), environment: ["WATCHDOG_USEC": "1000"])
        manager.startWatchdog()
        manager.readyAtTheLatest(after: .milliseconds(1)) { "x" }
        XCTAssertEqual(loop.scheduledTimerCount, 0)
    }
}
