import Foundation
import Glibc
import HTTP1
import XCTest

@testable import EventLoopIO

final class UnixSocketTests: XCTestCase {
    func testHTTPRoundTripBetweenALoopServerAndABlockingClient() throws {
        let directory = temporaryDirectory(self)
        let path = directory + "/api.sock"
        let loop = try EventLoop()
        let listener = try UnixListener.bind(path: path, mode: 0o600)
        var info = stat()
        XCTAssertEqual(stat(path, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
        XCTAssertEqual(info.st_mode & S_IFMT, S_IFSOCK)

        var served: [String] = []
        let acceptor = try Acceptor(listener: listener, loop: loop) { accepted in
            let channel = try! StreamChannel(socket: accepted.socket, loop: loop)
            var parser = HTTPRequestParser()
            channel.onRead = { bytes in
                parser.append(bytes)
                while let request = try! parser.nextRequest() {
                    served.append("\(request.method) \(request.path) \(request.queryValue("page") ?? "-")")
                    var response = HTTPResponse.json(#"{"echo":"\#(request.path)","bytes":\#(request.body.count)}"#)
                    if !request.keepAlive {
                        response.headers.add(name: "Connection", value: "close")
                    }
                    channel.write(response.serialize())
                    if !request.keepAlive {
                        channel.closeAfterFlush()
                    }
                }
            }
        }

        let responses = Shared<[HTTPResponse]>([])
        let clientError = Shared<Error?>(nil)
        let client = Thread {
            defer { loop.stop() }
            do {
                let socket = try UnixSocket.connectBlocking(path: path)
                defer { socket.close() }
                let first = try HTTPRequest(method: "GET", target: "/orders?page=2")
                let second = try HTTPRequest(
                    method: "POST", target: "/orders/a%20b", body: Array("{}".utf8),
                    keepAlive: false)
                try socket.writeAll(first.serialize() + second.serialize(), timeout: .seconds(5))
                var parser = HTTPResponseParser()
                while true {
                    let chunk = try socket.readSome(timeout: .seconds(5))
                    if chunk.isEmpty {
                        if let last = try parser.finish() { responses.value.append(last) }
                        return
                    }
                    parser.append(chunk)
                    while let response = try parser.nextResponse() { responses.value.append(response) }
                }
            } catch {
                clientError.value = error
            }
        }
        client.start()
        runLoop(loop)
        XCTAssertNil(clientError.value)
        XCTAssertEqual(served, ["GET /orders 2", "POST /orders/a b -"])
        XCTAssertEqual(responses.value.map(\.status), [200, 200])
        XCTAssertEqual(responses.value.last.map { String(decoding: $0.body, as: UTF8.self) }, #"{"echo":"/orders/a b","bytes":2}"#)
        XCTAssertEqual(responses.value.first?.headers["content-type"], "application/json")
        acceptor.close()
        XCTAssertFalse(FileManager.default.fileExists(atPath: path), "closing the listener removes its socket file")
    }

    func testStaleSocketFileIsReplacedButALiveListenerIsNot() throws {
        let directory = temporaryDirectory(self)
        let path = directory + "/stale.sock"
        // Leave a socket file behind with nothing listening, as a crashed daemon would.
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: Array(path.utf8) + [0])
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        XCTAssertEqual(bound, 0)
        close(fd)
        XCTAssertThrowsError(try UnixSocket.connectBlocking(path: path)) { error in
            XCTAssertEqual((error as? PosixError)?.errno, ECONNREFUSED)
        }

        let listener = try UnixListener.bind(path: path, mode: 0o660)
        var info = stat()
        XCTAssertEqual(stat(path, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o660)
        XCTAssertThrowsError(try UnixListener.bind(path: path)) { error in
            XCTAssertEqual((error as? PosixError)?.errno, EADDRINUSE)
        }
        // That refused bind probed the listener with a connection of its own: it is queued first.
        let refusedProbe = try XCTUnwrap(try listener.accept())
        refusedProbe.socket.close()
        let probe = try UnixSocket.connectBlocking(path: path)
        let accepted = try XCTUnwrap(try listener.accept())
        XCTAssertNil(try listener.accept())
        try probe.writeAll(Array("ok".utf8), timeout: .seconds(1))
        probe.close()
        try accepted.socket.setNonBlocking(true)
        XCTAssertEqual(try accepted.socket.readAll(timeout: .seconds(1)), Array("ok".utf8))
        listener.close()
        XCTAssertThrowsError(try UnixSocket.connectBlocking(path: path)) { error in
            XCTAssertEqual((error as? PosixError)?.errno, ENOENT)
        }
    }

    func testARegularFileIsNeverRemoved() throws {
        let directory = temporaryDirectory(self)
        let path = directory + "/not-a-socket"
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data("keep".utf8)))
        XCTAssertThrowsError(try UnixListener.bind(path: path)) { error in
            XCTAssertEqual((error as? PosixError)?.errno, EEXIST)
        }
        XCTAssertEqual(FileManager.default.contents(atPath: path), Data("keep".utf8))
    }

    func testBlockingReadTimesOut() throws {
        let directory = temporaryDirectory(self)
        let path = directory + "/quiet.sock"
        let listener = try UnixListener.bind(path: path)
        let client = try UnixSocket.connectBlocking(path: path)
        let start = MonotonicInstant.now
        XCTAssertThrowsError(try client.readSome(timeout: .milliseconds(50))) { error in
            XCTAssertEqual((error as? PosixError)?.errno, ETIMEDOUT)
        }
        XCTAssertGreaterThanOrEqual(MonotonicInstant.now - start, .milliseconds(50))
        client.close()
        listener.close()
    }

    func testOverlongPathIsRejected() {
        let path = "/tmp/" + String(repeating: "x", count: 200)
        XCTAssertThrowsError(try UnixListener.bind(path: path)) { error in
            XCTAssertEqual((error as? PosixError)?.errno, ENAMETOOLONG)
        }
    }
}
