import EventLoopIO
import Foundation
import Glibc
import SyncCore
import WebSocketTransport
import XCTest

@testable import OrderSyncNode

/// A master whose lease is lapsed holds a terminal's operations within the bound of its
/// `LeaseWatch` (`MasterNode.leaseHolds`), refuses the ones beyond it, and takes the held ones
/// back in order once the lease is held: the node keeps the bound's state across messages.
extension MasterWritesOffTheLoopTests {
    /// A terminal's session on one end of a socket pair (its handshake never starts).
    private func session(_ id: Int, peerEnd: inout Int32) throws -> TerminalSession {
        var fds: [Int32] = [0, 0]
        let type = Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, type, 0, &fds) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        peerEnd = fds[1]
        let transport = try WebSocketChannel.accept(
            Socket(adopting: fds[0]), loop: loop, configuration: WebSocketChannelConfiguration()
        ) { _ in .accept(subprotocol: nil) }
        return TerminalSession(id: id, transport: transport, address: "10.0.0.\(id):4000", host: "10.0.0.\(id)", now: loop.now)
    }

    func testALapsedLeaseHoldsUpToItsBoundThenRefuses() throws {
        let master = try master()
        var ends: [Int32] = [-1, -1]
        defer { for fd in ends where fd >= 0 { close(fd) } }
        let first = try session(1, peerEnd: &ends[0])
        let second = try session(2, peerEnd: &ends[1])
        master.lease = LeaseWatch(
            lease: MasterLease(leaseMillis: 2_500, voters: ["TILL-0001-AAAA", "TILL-0002-BBBB"], ownId: master.nodeIdentity.nodeId),
            held: LeaseHeldMessages(mostMessages: 2, mostBytes: 1 << 20))
        let op: (String) -> [UInt8] = { Array(#"{"operation":0,"orders":[],"opId":"\#($0)"}"#.utf8) }
        let ack = Array(#"{"type":"ack","seq":0}"#.utf8)

        XCTAssertFalse(master.leaseHolds(ack, from: second), "a link that holds nothing: applied as usual")
        XCTAssertTrue(master.leaseHolds(op("a"), from: first))
        XCTAssertTrue(master.leaseHolds(op("b"), from: second))
        XCTAssertEqual(master.lease?.held.held.count, 2)
        XCTAssertTrue(master.leaseHolds(op("c"), from: first), "refused, not applied")
        XCTAssertEqual(master.lease?.held.held.map(\.session), [1, 2], "the bound of 2 holds")
        XCTAssertEqual(master.lease?.held.refused, 1)
        XCTAssertTrue(master.leaseHolds(ack, from: first), "link 1's ack does not fit behind its held operation")
        XCTAssertEqual(master.lease?.held.held.map(\.session), [2], "link 1 is ended, what it held dropped")

        // Without `--auto-failover` (no lease) nothing is held.
        master.lease = nil
        XCTAssertFalse(master.leaseHolds(op("d"), from: first))
    }
}
