import Foundation
import Glibc
import XCTest

@testable import EventLoopIO

final class EventLoopTests: XCTestCase {
    func testTimersFireInDeadlineOrderAndCanBeCancelled() throws {
        let loop = try EventLoop()
        var fired: [String] = []
        let start = loop.now
        var lastFiredAt = start
        loop.schedule(after: .milliseconds(30)) {
            fired.append("30")
            lastFiredAt = loop.now
            loop.stop()
        }
        loop.schedule(after: .milliseconds(10)) { fired.append("10a") }
        let cancelled = loop.schedule(after: .milliseconds(15)) { fired.append("15") }
        loop.schedule(after: .milliseconds(20)) { fired.append("20") }
        loop.schedule(after: .milliseconds(10)) { fired.append("10b") }
        loop.schedule(after: .zero) { fired.append("0") }
        XCTAssertTrue(loop.cancel(cancelled))
        XCTAssertFalse(loop.cancel(cancelled), "a cancelled timer cannot be cancelled twice")
        runLoop(loop)
        XCTAssertEqual(fired, ["0", "10a", "10b", "20", "30"])
        XCTAssertGreaterThanOrEqual(lastFiredAt - start, .milliseconds(30))
        XCTAssertEqual(loop.scheduledTimerCount, 0)
    }

    func testTimerCanBeCancelledByAnEarlierTimerOfTheSameTurn() throws {
        let loop = try EventLoop()
        var ran = false
        var later: TimerHandle?
        loop.schedule(after: .milliseconds(5)) {
            if let later { loop.cancel(later) }
        }
        later = loop.schedule(after: .milliseconds(40)) { ran = true }
        loop.schedule(after: .milliseconds(60)) { loop.stop() }
        runLoop(loop)
        XCTAssertFalse(ran)
    }

    func testManyCancelledTimersCompactTheHeap() throws {
        let loop = try EventLoop()
        var handles: [TimerHandle] = []
        for index in 0..<1000 {
            handles.append(loop.schedule(after: .milliseconds(1000 + index)) { XCTFail("cancelled timer ran") })
        }
        var order: [Int] = []
        // Deadlines 20 ms apart: the clock moving on between two `schedule` calls (a slow,
        // sanitized build) cannot make two of them fall due in the same millisecond.
        for index in 0..<5 {
            loop.schedule(after: .milliseconds(20 * (5 - index))) { order.append(index) }
        }
        for handle in handles { loop.cancel(handle) }
        XCTAssertEqual(loop.scheduledTimerCount, 5)
        loop.schedule(after: .milliseconds(120)) { loop.stop() }
        runLoop(loop)
        XCTAssertEqual(order, [4, 3, 2, 1, 0])
    }

    func testWakerFromAnotherThreadRunsOnTheLoopThread() throws {
        let loop = try EventLoop()
        let loopThread = pthread_self()
        let ranOnLoopThread = Shared(false)
        let runs = Shared(0)
        let waker = loop.makeWaker {
            runs.value += 1
            ranOnLoopThread.value = pthread_equal(pthread_self(), loopThread) != 0
            loop.stop()
        }
        let thread = Thread { waker.wake() }
        thread.start()
        runLoop(loop)
        XCTAssertTrue(ranOnLoopThread.value)
        XCTAssertEqual(runs.value, 1)
    }

    func testExecuteFromManyThreadsRunsEveryTask() throws {
        let loop = try EventLoop()
        let loopThread = pthread_self()
        let count = Shared(0)
        let total = 4 * 250
        for _ in 0..<4 {
            Thread {
                for _ in 0..<250 {
                    loop.execute {
                        XCTAssertNotEqual(pthread_equal(pthread_self(), loopThread), 0)
                        count.value += 1
                        if count.value == total { loop.stop() }
                    }
                }
            }.start()
        }
        runLoop(loop)
        XCTAssertEqual(count.value, total)
    }

    func testLoopTellsItsOwnThreadFromOthers() throws {
        let loop = try EventLoop()
        XCTAssertFalse(loop.inEventLoop, "a loop that is not running has no thread")
        XCTAssertTrue(loop.mayUseLoopBoundState, "the owner of a loop that is not running sets it up")
        let onLoop = Shared<[Bool]>([])
        let offLoop = Shared<[Bool]>([])
        loop.schedule(after: .zero) {
            onLoop.value = [loop.inEventLoop, loop.mayUseLoopBoundState]
            Thread {
                // Read on the other thread, handed back through `execute` (which synchronizes).
                let observed = [loop.inEventLoop, loop.mayUseLoopBoundState]
                loop.execute {
                    offLoop.value = observed
                    loop.stop()
                }
            }.start()
        }
        runLoop(loop)
        XCTAssertEqual(onLoop.value, [true, true], "a handler runs on the loop's thread")
        XCTAssertEqual(offLoop.value, [false, false], "another thread is told apart while the loop runs")
        XCTAssertFalse(loop.inEventLoop, "the loop forgets its thread when run() returns")
        XCTAssertTrue(loop.mayUseLoopBoundState)
    }

    func testLoopBoundValueTravelsThroughAnotherThreadBackToTheLoop() throws {
        final class Counter {
            var count = 0
        }
        let loop = try EventLoop()
        let counter = Counter()
        let bound = LoopBound(counter, loop: loop)
        loop.schedule(after: .zero) {
            Thread {
                // Only carried here; unwrapped once the closure is back on the loop.
                loop.execute {
                    bound.value.count += 1
                    loop.stop()
                }
            }.start()
        }
        runLoop(loop)
        XCTAssertEqual(counter.count, 1)
        XCTAssertTrue(bound.value === counter)
    }

    func testStopFromAnotherThread() throws {
        let loop = try EventLoop()
        Thread { loop.stop() }.start()
        runLoop(loop)
    }

    func testIdleLoopUsesNoCPU() throws {
        let loop = try EventLoop()
        // A far timer and a registered but silent descriptor: the loop must simply sleep.
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        defer { close(fds[0]); close(fds[1]) }
        try loop.register(fd: fds[0], interest: .readable) { _ in XCTFail("nothing was written") }
        let start = loop.now
        let cpuBefore = threadCPUMilliseconds()
        loop.schedule(after: .milliseconds(300)) { loop.stop() }
        runLoop(loop)
        let cpu = threadCPUMilliseconds() - cpuBefore
        XCTAssertGreaterThanOrEqual(loop.now - start, .milliseconds(300))
        XCTAssertLessThan(cpu, 30, "an idle loop must sleep in epoll_wait, not spin")
        loop.unregister(fd: fds[0])
    }

    func testStaleEventOfAClosedDescriptorIsNotDeliveredToANewRegistrant() throws {
        let loop = try EventLoop()
        var first: [Int32] = [0, 0]
        var second: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&first), 0)
        XCTAssertEqual(pipe(&second), 0)
        // Both read ends are readable before the loop starts, so one epoll_wait returns both.
        var byte: UInt8 = 1
        XCTAssertEqual(write(first[1], &byte, 1), 1)
        XCTAssertEqual(write(second[1], &byte, 1), 1)
        var handled = 0
        var staleDeliveries = 0
        var reused: Int32 = -1
        func replaceOther(_ other: Int32) {
            // Drop the other descriptor and put a fresh, empty pipe under the same number.
            loop.unregister(fd: other)
            var fresh: [Int32] = [0, 0]
            XCTAssertEqual(pipe(&fresh), 0)
            XCTAssertEqual(dup2(fresh[0], other), other)
            close(fresh[0])
            close(fresh[1])
            reused = other
            try? loop.register(fd: other, interest: .readable) { _ in staleDeliveries += 1 }
            loop.runSoon { loop.stop() }
        }
        try loop.register(fd: first[0], interest: .readable) { _ in
            handled += 1
            replaceOther(second[0])
        }
        try loop.register(fd: second[0], interest: .readable) { _ in
            handled += 1
            replaceOther(first[0])
        }
        runLoop(loop)
        XCTAssertEqual(handled, 1, "the replaced descriptor's queued event must be dropped")
        XCTAssertEqual(staleDeliveries, 0)
        loop.unregister(fd: first[0])
        loop.unregister(fd: second[0])
        XCTAssertNotEqual(reused, -1)
        for fd in [first[0], first[1], second[0], second[1]] { close(fd) }
    }

    func testInterestChangeAndHangupReadiness() throws {
        let loop = try EventLoop()
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        var seen: [Readiness] = []
        try loop.register(fd: fds[0], interest: []) { readiness in
            seen.append(readiness)
            loop.unregister(fd: fds[0])
            loop.stop()
        }
        XCTAssertEqual(loop.interest(fd: fds[0]), [])
        // With no interest only a hangup is reported: close the write end.
        close(fds[1])
        runLoop(loop)
        XCTAssertEqual(seen.count, 1)
        XCTAssertTrue(seen[0].contains(.hangup))
        XCTAssertFalse(seen[0].contains(.readable), "readable was not asked for")
        close(fds[0])
    }

    func testSignalIsDeliveredThroughSignalfd() throws {
        try Signals.block([SIGUSR1])
        defer { try? Signals.unblock([SIGUSR1]) }
        let loop = try EventLoop()
        var received: [Int32] = []
        try loop.onSignal([SIGUSR1]) { signal in
            received.append(signal)
            loop.stop()
        }
        loop.runSoon { raise(SIGUSR1) }
        runLoop(loop)
        XCTAssertEqual(received, [SIGUSR1])
    }

    func testSyscallFunnelMapsErrors() throws {
        XCTAssertEqual(
            try Syscall.nonBlocking("test") { () -> Int32 in
                errno = EAGAIN; return -1
            }, .wouldBlock)
        var attempts = 0
        let value = try Syscall.call("test") { () -> Int32 in
            attempts += 1
            if attempts < 3 { errno = EINTR; return -1 }
            return 7
        }
        XCTAssertEqual(value, 7)
        XCTAssertEqual(attempts, 3, "EINTR is retried")
        XCTAssertThrowsError(
            try Syscall.call("connect") { () -> Int32 in
                errno = ECONNREFUSED; return -1
            }
        ) { error in
            XCTAssertEqual(error as? PosixError, PosixError(call: "connect", errno: ECONNREFUSED))
            XCTAssertEqual("\(error)", "connect: Connection refused (ECONNREFUSED, errno 111)")
        }
        XCTAssertTrue(PosixError(call: "accept4", errno: EMFILE).isResourceExhaustion)
        XCTAssertFalse(PosixError(call: "accept4", errno: ECONNREFUSED).isResourceExhaustion)
    }
}
