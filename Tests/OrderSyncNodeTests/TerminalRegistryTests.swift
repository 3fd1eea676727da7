import EventLoopIO
import Foundation
import Glibc
import WebSocketTransport
import XCTest

@testable import OrderSyncNode

/// The master's terminal registry: ids, per-address counts and caps, the oldest unauthenticated
/// connection, and closing.
final class TerminalRegistryTests: XCTestCase {
    private var loop: EventLoop!
    /// The test's ends of the sessions' socket pairs, closed at the end.
    private var peers: [Int32] = []

    override func setUpWithError() throws {
        loop = try EventLoop()
    }

    override func tearDown() {
        for fd in peers { close(fd) }
        loop = nil
    }

    /// A session from `host`, accepted `after` the first one, on one end of a socket pair (its
    /// WebSocket handshake never starts).
    private func session(_ id: Int, host: String, after: Duration = .zero) throws -> TerminalSession {
        var fds: [Int32] = [0, 0]
        let type = Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, type, 0, &fds) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        peers.append(fds[1])
        let transport = try WebSocketChannel.accept(
            Socket(adopting: fds[0]), loop: loop, configuration: WebSocketChannelConfiguration()
        ) { _ in .accept(subprotocol: nil) }
        return TerminalSession(id: id, transport: transport, address: "\(host):4000", host: host, now: loop.now + after)
    }

    func testIdsCountUpAndSessionsAreFoundUntilRemoved() throws {
        let registry = TerminalRegistry(maxHandshakesPerAddress: 4, maxConnectionsPerAddress: 8)
        let first = try XCTUnwrap(try registry.add { try session($0, host: "10.0.0.1") })
        let second = try XCTUnwrap(try registry.add { try session($0, host: "10.0.0.2") })
        XCTAssertEqual([first.id, second.id], [1, 2])
        XCTAssertEqual(registry.count, 2)
        XCTAssertTrue(registry[2] === second)
        registry.remove(first)
        XCTAssertNil(registry[1])
        XCTAssertEqual(registry.count, 1)
        let third = try XCTUnwrap(try registry.add { try session($0, host: "10.0.0.1") })
        XCTAssertEqual(third.id, 3, "an id is never given twice")
    }

    func testCountsPerHostAndTheCapsOfAnAddress() throws {
        let registry = TerminalRegistry(maxHandshakesPerAddress: 2, maxConnectionsPerAddress: 3)
        let a1 = try XCTUnwrap(try registry.add { try session($0, host: "10.0.0.1") })
        _ = try registry.add { try session($0, host: "10.0.0.1") }
        _ = try registry.add { try session($0, host: "10.0.0.2") }
        let ended = try XCTUnwrap(try registry.add { try session($0, host: "10.0.0.1") })
        ended.phase = .ended
        var counts = registry.counts(host: "10.0.0.1")
        XCTAssertEqual(
            counts, .init(total: 3, preAuthenticated: 3, hostOpen: 2, hostPreAuthenticated: 2), "an ended session counts nowhere")
        XCTAssertEqual(
            registry.addressLimitReached("10.0.0.1", counts), "2 connections from 10.0.0.1 not authenticated yet (limit 2)")

        a1.phase = .open
        counts = registry.counts(host: "10.0.0.1")
        XCTAssertEqual(counts, .init(total: 3, preAuthenticated: 2, hostOpen: 2, hostPreAuthenticated: 1))
        XCTAssertNil(registry.addressLimitReached("10.0.0.1", counts))
        _ = try registry.add { try session($0, host: "10.0.0.1") }.map { $0.phase = .open }
        counts = registry.counts(host: "10.0.0.1")
        XCTAssertEqual(registry.addressLimitReached("10.0.0.1", counts), "3 connections from 10.0.0.1 open (limit 3)")
        XCTAssertNil(registry.addressLimitReached("10.0.0.2", registry.counts(host: "10.0.0.2")))
    }

    func testTheOldestUnauthenticatedSessionIsTheFirstAccepted() throws {
        let registry = TerminalRegistry(maxHandshakesPerAddress: 4, maxConnectionsPerAddress: 8)
        let authenticated = try XCTUnwrap(try registry.add { try session($0, host: "10.0.0.1") })
        authenticated.phase = .open
        _ = try registry.add { try session($0, host: "10.0.0.2", after: .seconds(3)) }
        let oldest = try XCTUnwrap(try registry.add { try session($0, host: "10.0.0.3", after: .seconds(1)) })
        XCTAssertTrue(registry.oldestUnauthenticated() === oldest)
        oldest.evicted = true
        XCTAssertEqual(registry.oldestUnauthenticated()?.host, "10.0.0.2", "an evicted session is no longer a candidate")
    }

    /// Closing hands out every session once, refuses new ones without building them, and is
    /// drained when the last one is removed.
    func testClosingRefusesNewSessionsAndDrains() throws {
        let registry = TerminalRegistry(maxHandshakesPerAddress: 4, maxConnectionsPerAddress: 8)
        let a = try XCTUnwrap(try registry.add { try session($0, host: "10.0.0.1") })
        let b = try XCTUnwrap(try registry.add { try session($0, host: "10.0.0.2") })
        XCTAssertEqual(registry.phase, .accepting)
        XCTAssertFalse(registry.isDrained)
        XCTAssertEqual(Set(registry.close().map(\.id)), [a.id, b.id])
        XCTAssertEqual(registry.phase, .closing)
        XCTAssertEqual(registry.close().count, 0, "closed once")
        var built = false
        XCTAssertNil(
            try registry.add { id in
                built = true
                return try session(id, host: "10.0.0.3")
            })
        XCTAssertFalse(built, "nothing is built for a closing registry")
        registry.remove(a)
        XCTAssertFalse(registry.isDrained)
        registry.remove(b)
        XCTAssertTrue(registry.isDrained)
    }
}
