import Foundation
import Glibc
import XCTest

@testable import EventLoopIO

final class HostResolverTests: XCTestCase {
    func testNumericHostsNeedNoLookup() {
        XCTAssertTrue(HostResolver.isNumeric("127.0.0.1"))
        XCTAssertTrue(HostResolver.isNumeric("::1"))
        XCTAssertTrue(HostResolver.isNumeric("fe80::1"))
        XCTAssertFalse(HostResolver.isNumeric("localhost"))
        XCTAssertFalse(HostResolver.isNumeric("master.local"))
        XCTAssertFalse(HostResolver.isNumeric("127.0.0.1:7420"))
    }

    func testANameIsResolvedOffTheLoopAndAnsweredOnIt() throws {
        let loop = try EventLoop()
        let answer = Shared<Result<[String], PosixError>?>(nil)
        let loopThread = pthread_self()
        let answeredOnLoopThread = Shared(false)
        HostResolver.resolve(host: "localhost", port: 7420, on: loop) { result in
            answeredOnLoopThread.value = pthread_equal(pthread_self(), loopThread) != 0
            answer.value = result
            loop.stop()
        }
        runLoop(loop)
        XCTAssertTrue(answeredOnLoopThread.value)
        let addresses = try XCTUnwrap(answer.value).get()
        XCTAssertFalse(addresses.isEmpty)
        XCTAssertTrue(addresses.allSatisfy(HostResolver.isNumeric), "\(addresses)")
        XCTAssertTrue(addresses.contains("127.0.0.1") || addresses.contains("::1"), "\(addresses)")
    }

    func testAnUnknownNameIsAnError() throws {
        let loop = try EventLoop()
        let answer = Shared<Result<[String], PosixError>?>(nil)
        HostResolver.resolve(host: "no-such-host.invalid", port: 1, on: loop) { result in
            answer.value = result
            loop.stop()
        }
        runLoop(loop)
        guard case .failure(let error)? = answer.value else {
            return XCTFail("resolved \(String(describing: answer.value))")
        }
        XCTAssertTrue("\(error)".contains("no-such-host.invalid") || "\(error)".contains("getaddrinfo"), "\(error)")
    }
}
