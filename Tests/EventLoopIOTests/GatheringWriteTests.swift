import EventLoopIO
import Glibc
import XCTest

/// `StreamChannel.write(gathering:)`: many buffers, one `sendmsg` per batch, in order.
final class GatheringWriteTests: XCTestCase {
    /// Writes `buffers` (after `first`, if any, with `write(_:)`) from a server channel to a
    /// client that reads everything until the server closes; returns what the client read.
    private func transfer(_ buffers: [[UInt8]], first: [UInt8]? = nil) throws -> [UInt8] {
        let loop = try EventLoop()
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0)
        var server: StreamChannel?
        var received: [UInt8] = []
        let acceptor = try Acceptor(listener: listener, loop: loop) { accepted in
            do {
                let channel = try StreamChannel(socket: accepted.socket, loop: loop)
                server = channel
                if let first { channel.write(first) }
                channel.write(gathering: buffers)
                channel.closeAfterFlush()
            } catch {
                XCTFail("adopting an accepted socket failed: \(error)")
            }
        }
        let socket = try TCPSocket.connect(host: "127.0.0.1", port: listener.localPort)
        let client = try StreamChannel.connecting(socket, loop: loop) { _ in }
        client.onRead = { received.append(contentsOf: $0) }
        client.onClose = { _ in loop.stop() }
        runLoop(loop)
        acceptor.close()
        _ = server
        return received
    }

    func testSmallBuffersArriveWholeAndInOrder() throws {
        let buffers = (0..<300).map { pattern(count: 1 + $0 % 97, seed: $0) }
        XCTAssertEqual(try transfer(buffers), Array(buffers.joined()))
    }

    func testMoreThanTheSocketTakesIsQueuedInOrderAfterAPartialWrite() throws {
        // 24 MiB would overflow the 16 MiB limit; 8 MiB in 1 KiB..256 KiB buffers is more than
        // the socket buffers hold at once, so the kernel takes part of a batch.
        var buffers: [[UInt8]] = []
        var total = 0
        var seed = 0
        while total < 8 << 20 {
            let size = [1024, 256 << 10, 7, 64 << 10][seed % 4]
            buffers.append(pattern(count: size, seed: seed))
            total += size
            seed += 1
        }
        XCTAssertEqual(try transfer(buffers), Array(buffers.joined()))
    }

    func testGatheredBuffersFollowBytesAlreadyQueued() throws {
        let first = pattern(count: 6 << 20, seed: 1)
        let buffers = [pattern(count: 10, seed: 2), [], pattern(count: 70_000, seed: 3)]
        XCTAssertEqual(try transfer(buffers, first: first), first + Array(buffers.joined()))
    }
}
