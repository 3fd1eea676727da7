import CIMode
import Foundation
import Glibc
import XCTest

@testable import EventLoopIO

final class StreamChannelTests: XCTestCase {
    /// A loop with a listener on 127.0.0.1 whose accepted connections become channels.
    private func makeServer(_ loop: EventLoop, onChannel: @escaping (StreamChannel) -> Void) throws -> (Acceptor, UInt16) {
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0)
        let port = listener.localPort
        let acceptor = try Acceptor(listener: listener, loop: loop) { accepted in
            do {
                try accepted.socket.setNoDelay(true)
                onChannel(try StreamChannel(socket: accepted.socket, loop: loop))
            } catch {
                XCTFail("adopting an accepted socket failed: \(error)")
            }
        }
        return (acceptor, port)
    }

    func testEchoOverLoopbackWithServerAndClientOnOneLoop() throws {
        let loop = try EventLoop()
        var serverCloses: [StreamChannel.CloseReason] = []
        var serverPeer = ""
        let (acceptor, port) = try makeServer(loop) { server in
            serverPeer = server.peerAddress
            server.onRead = { server.write($0) }
            server.onClose = { reason in
                serverCloses.append(reason)
                loop.runSoon { loop.stop() }
            }
        }
        let message = pattern(count: 200_000)
        var echoed: [UInt8] = []
        var clientCloses: [StreamChannel.CloseReason] = []
        var connected = false
        let socket = try TCPSocket.connect(host: "127.0.0.1", port: port)
        try socket.setKeepAlive(true, idle: .seconds(30), interval: .seconds(5), probes: 3)
        let client = try StreamChannel.connecting(socket, loop: loop) { channel in
            connected = true
            XCTAssertEqual(channel.peerAddress, "127.0.0.1:\(port)")
        }
        client.write(Array(message[..<1000])) // buffered until connected
        client.write(Array(message[1000...]))
        client.onRead = { bytes in
            echoed += bytes
            if echoed.count == message.count {
                client.close()
            }
        }
        client.onClose = { clientCloses.append($0) }
        runLoop(loop)
        acceptor.close()
        XCTAssertTrue(connected)
        XCTAssertEqual(echoed, message)
        XCTAssertEqual(clientCloses, [.localClose])
        XCTAssertEqual(serverCloses, [.endOfFile])
        XCTAssertTrue(serverPeer.hasPrefix("127.0.0.1:"))
        XCTAssertFalse(client.isOpen)
        XCTAssertEqual(loop.registrationCount, 1, "only the loop's own wakeup descriptor is left")
    }

    func testIPv6LoopbackEcho() throws {
        let loop = try EventLoop()
        let listener: TCPListener
        do {
            listener = try TCPListener.bind(host: "::1", port: 0)
        } catch {
            // Under CI a missing prerequisite is a failure, not a skip.
            if CIMode.isOn { throw error }
            throw XCTSkip("no IPv6 loopback here: \(error)")
        }
        let acceptor = try Acceptor(listener: listener, loop: loop) { accepted in
            XCTAssertTrue(accepted.peerAddress.hasPrefix("[::1]:"))
            let server = try! StreamChannel(socket: accepted.socket, loop: loop)
            server.onRead = {
                server.write($0); server.closeAfterFlush()
            }
        }
        var received: [UInt8] = []
        let client = try StreamChannel.connecting(
            try TCPSocket.connect(host: "::1", port: listener.localPort),
            loop: loop
        ) { $0.write(Array("ping".utf8)) }
        client.onRead = { received += $0 }
        client.onClose = { _ in loop.stop() }
        runLoop(loop)
        acceptor.close()
        XCTAssertEqual(received, Array("ping".utf8))
    }

    func testLargeWriteToASlowReaderUsesTheOutboundBufferAndEPOLLOUT() throws {
        let loop = try EventLoop()
        let total = 16 << 20
        let message = pattern(count: total, seed: 7)
        var writer: StreamChannel?
        let (acceptor, port) = try makeServer(loop) { channel in
            writer = channel
            loop.runSoon { loop.stop() }
        }
        // The reader is a plain socket, not read from until the writer is backed up.
        let readerSocket = try TCPSocket.connect(host: "127.0.0.1", port: port)
        runLoop(loop)
        let server = try XCTUnwrap(writer)
        server.maxPendingBytes = 32 << 20
        server.write(message)
        XCTAssertGreaterThan(server.pendingBytes, 0, "16 MiB cannot fit in the kernel buffers of a non-reading peer")
        XCTAssertEqual(loop.interest(fd: server.descriptor), [.readable, .writable], "EPOLLOUT while bytes are pending")
        XCTAssertTrue(server.isOpen)

        var received: [UInt8] = []
        received.reserveCapacity(total)
        var drainedInterest: Interest?
        let reader = try StreamChannel(socket: readerSocket, loop: loop)
        reader.maxReadBytes = 256 << 10
        reader.onRead = { bytes in
            received += bytes
            if received.count == total {
                drainedInterest = loop.interest(fd: server.descriptor)
                loop.stop()
            }
        }
        runLoop(loop)
        XCTAssertEqual(received.count, total)
        XCTAssertTrue(received == message, "bytes arrive complete and in order")
        XCTAssertEqual(server.pendingBytes, 0)
        XCTAssertEqual(drainedInterest, .readable, "EPOLLOUT is dropped once the buffer is empty")
        reader.close()
        server.close()
        acceptor.close()
    }

    func testOverflowLimitClosesTheChannelOfAPeerThatDoesNotRead() throws {
        let loop = try EventLoop()
        var writer: StreamChannel?
        let (acceptor, port) = try makeServer(loop) { channel in
            writer = channel
            loop.runSoon { loop.stop() }
        }
        let readerSocket = try TCPSocket.connect(host: "127.0.0.1", port: port)
        runLoop(loop)
        let server = try XCTUnwrap(writer)
        server.maxPendingBytes = 1 << 20
        var reasons: [StreamChannel.CloseReason] = []
        server.onClose = { reason in
            reasons.append(reason)
            loop.stop()
        }
        var writes = 0
        while server.isWritable && writes < 256 {
            server.write(pattern(count: 256 << 10))
            writes += 1
        }
        XCTAssertFalse(server.isOpen)
        XCTAssertLessThan(writes, 256)
        XCTAssertEqual(server.pendingBytes, 0, "the buffer is released on close")
        server.write([1, 2, 3]) // ignored after close
        XCTAssertEqual(reasons, [], "onClose runs from the loop, not inside write()")
        runLoop(loop)
        XCTAssertEqual(reasons, [.sendBufferOverflow])
        readerSocket.close()
        acceptor.close()
    }

    func testPeerResetWhileBytesArePendingClosesWithAnError() throws {
        let loop = try EventLoop()
        var writer: StreamChannel?
        let (acceptor, port) = try makeServer(loop) { channel in
            writer = channel
            loop.runSoon { loop.stop() }
        }
        let readerSocket = try TCPSocket.connect(host: "127.0.0.1", port: port)
        runLoop(loop)
        let server = try XCTUnwrap(writer)
        server.maxPendingBytes = 64 << 20
        server.write(pattern(count: 16 << 20))
        XCTAssertGreaterThan(server.pendingBytes, 0)
        var reasons: [StreamChannel.CloseReason] = []
        server.onClose = { reason in
            reasons.append(reason)
            loop.stop()
        }
        // SO_LINGER with a zero timeout makes close() send RST instead of FIN.
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        XCTAssertEqual(
            setsockopt(
                readerSocket.descriptor, SOL_SOCKET, SO_LINGER, &linger,
                socklen_t(MemoryLayout<Glibc.linger>.size)), 0)
        readerSocket.close()
        runLoop(loop)
        XCTAssertEqual(reasons.count, 1)
        guard case .error(let error) = reasons.first else {
            return XCTFail("expected an error, got \(reasons)")
        }
        XCTAssertTrue([ECONNRESET, EPIPE].contains(error.errno), "\(error)")
        acceptor.close()
    }

    func testCloseAfterFlushGivesUpOnAPeerThatNeverCloses() throws {
        let loop = try EventLoop()
        var reasons: [StreamChannel.CloseReason] = []
        let (acceptor, port) = try makeServer(loop) { server in
            server.closeTimeout = .milliseconds(100)
            server.write(Array("last words".utf8))
            server.closeAfterFlush()
            server.onClose = { reason in
                reasons.append(reason)
                loop.stop()
            }
        }
        // A plain socket that reads nothing and never closes.
        let silent = try TCPSocket.connect(host: "127.0.0.1", port: port)
        let start = loop.now
        runLoop(loop)
        XCTAssertGreaterThanOrEqual(loop.now - start, .milliseconds(100))
        XCTAssertEqual(reasons, [.localClose], "everything was sent; only the peer's close was missing")
        try silent.setNonBlocking(true)
        XCTAssertEqual(try silent.readAll(timeout: .seconds(1)), Array("last words".utf8))
        silent.close()
        acceptor.close()
    }

    func testEndOfFileDeliversOnCloseExactlyOnce() throws {
        let loop = try EventLoop()
        var reasons: [StreamChannel.CloseReason] = []
        var server: StreamChannel?
        let (acceptor, port) = try makeServer(loop) { channel in
            server = channel
            channel.onClose = { reason in
                reasons.append(reason)
                // Closing again from inside onClose must not report a second time.
                channel.close()
                channel.closeAfterFlush()
            }
        }
        let client = try StreamChannel.connecting(try TCPSocket.connect(host: "127.0.0.1", port: port), loop: loop) {
            $0.write(Array("bye".utf8))
            $0.closeAfterFlush()
        }
        var clientReasons: [StreamChannel.CloseReason] = []
        client.onClose = { reason in
            clientReasons.append(reason)
            // The server saw end of stream before the client could read it, so it closed first.
            loop.runSoon { loop.stop() }
        }
        runLoop(loop)
        XCTAssertEqual(reasons, [.endOfFile])
        XCTAssertEqual(clientReasons, [.localClose], "closeAfterFlush completes once the peer closes too")
        XCTAssertFalse(server?.isOpen ?? true)
        acceptor.close()
    }

    func testCloseAfterFlushDeliversPendingBytesBeforeClosing() throws {
        let loop = try EventLoop()
        let message = pattern(count: 4 << 20, seed: 3)
        var reasons: [String: [StreamChannel.CloseReason]] = [:]
        func record(_ side: String, _ reason: StreamChannel.CloseReason) {
            reasons[side, default: []].append(reason)
            if reasons.count == 2 {
                loop.runSoon { loop.stop() }
            }
        }
        let (acceptor, port) = try makeServer(loop) { server in
            server.write(message)
            server.closeAfterFlush()
            server.write([0]) // ignored: a close was requested
            server.onClose = { record("server", $0) }
        }
        var received: [UInt8] = []
        let client = try StreamChannel.connecting(try TCPSocket.connect(host: "127.0.0.1", port: port), loop: loop) { _ in }
        client.onRead = { received += $0 }
        client.onClose = { record("client", $0) }
        runLoop(loop)
        XCTAssertTrue(received == message)
        XCTAssertEqual(reasons["client"], [.endOfFile])
        XCTAssertEqual(reasons["server"], [.localClose])
        acceptor.close()
    }

    func testConnectToAClosedPortReportsConnectionRefused() throws {
        let loop = try EventLoop()
        let port = try closedPort()
        var reasons: [StreamChannel.CloseReason] = []
        do {
            let socket = try TCPSocket.connect(host: "127.0.0.1", port: port)
            let channel = try StreamChannel.connecting(socket, loop: loop) { _ in XCTFail("must not connect") }
            channel.onClose = { reason in
                reasons.append(reason)
                loop.stop()
            }
            runLoop(loop)
        } catch let error as PosixError {
            // Loopback may refuse synchronously.
            reasons.append(.error(error))
        }
        XCTAssertEqual(reasons, [.error(PosixError(call: "connect", errno: ECONNREFUSED))])
    }

    func testConnectResolvesLocalhostByName() throws {
        let loop = try EventLoop()
        let (acceptor, port) = try makeServer(loop) { server in
            server.onRead = { _ in loop.stop() }
        }
        let client = try StreamChannel.connecting(try TCPSocket.connect(host: "localhost", port: port), loop: loop) {
            $0.write([42])
        }
        runLoop(loop)
        client.close()
        acceptor.close()
        XCTAssertThrowsError(try TCPSocket.connect(host: "no-such-host.invalid", port: 80)) { error in
            XCTAssertEqual((error as? PosixError)?.call, "getaddrinfo(no-such-host.invalid)")
        }
    }

    func testAcceptReturnsNilWhenNothingIsPending() throws {
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0)
        XCTAssertNotEqual(listener.localPort, 0)
        XCTAssertNil(try listener.accept())
        listener.close()
    }

    func testAcceptorBacksOffWhenDescriptorsRunOut() throws {
        let loop = try EventLoop()
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0)
        let client = try TCPSocket.connect(host: "127.0.0.1", port: listener.localPort)
        var saved = rlimit()
        XCTAssertEqual(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &saved), 0)
        // The lowest free descriptor number becomes the limit: accept4 must fail with EMFILE.
        let lowestFree = dup(0)
        close(lowestFree)
        var lowered = saved
        lowered.rlim_cur = rlim_t(lowestFree)
        XCTAssertEqual(setrlimit(Int32(RLIMIT_NOFILE.rawValue), &lowered), 0)
        var restored = false
        defer { if !restored { _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &saved) } }

        var errors: [PosixError] = []
        var accepted: [AcceptedSocket] = []
        let acceptor = try Acceptor(listener: listener, loop: loop) { connection in
            accepted.append(connection)
            loop.stop()
        }
        acceptor.backoff = .milliseconds(50)
        acceptor.onError = { error in
            errors.append(error)
            XCTAssertTrue(acceptor.isBackingOff == false, "onError runs before the pause starts")
            loop.runSoon {
                XCTAssertTrue(acceptor.isBackingOff)
                XCTAssertEqual(loop.interest(fd: listener.descriptor), [], "no readiness while backing off")
                restored = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &saved) == 0
            }
        }
        runLoop(loop)
        XCTAssertEqual(errors.count, 1)
        XCTAssertEqual(errors.first?.errno, EMFILE)
        XCTAssertTrue(errors.first?.isResourceExhaustion ?? false)
        XCTAssertEqual(accepted.count, 1, "the queued connection is accepted after the back-off")
        accepted.first?.socket.close()
        client.close()
        acceptor.close()
    }
}
