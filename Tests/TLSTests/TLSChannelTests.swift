import EventLoopIO
import XCTest

@testable import TLS

/// TLS sessions as the codecs of two `StreamChannel`s over loopback on one event loop: the
/// server adopts the codec on its first bytes (as the dashboard does), the client on connect;
/// what each writes arrives whole and in order, and a plain peer is closed.
final class TLSChannelTests: XCTestCase {
    private func runLoop(_ loop: EventLoop) {
        var timedOut = false
        let watchdog = loop.schedule(after: .seconds(10)) {
            timedOut = true
            loop.stop()
        }
        loop.run()
        loop.cancel(watchdog)
        XCTAssertFalse(timedOut, "the loop did not finish within 10 s")
    }

    private func server(
        _ loop: EventLoop, certificate: TLSCertificate, onChannel: @escaping (StreamChannel) -> Void
    ) throws -> (Acceptor, UInt16) {
        let context = try TLSContext.server(certificate: certificate)
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0)
        let port = listener.localPort
        let acceptor = try Acceptor(listener: listener, loop: loop) { accepted in
            do {
                let channel = try StreamChannel(socket: accepted.socket, loop: loop)
                channel.onRead = { first in
                    guard let session = try? TLSSession(context: context) else { return XCTFail("no session") }
                    onChannel(channel)
                    channel.install(codec: session, replaying: first)
                }
            } catch {
                XCTFail("adopting an accepted socket failed: \(error)")
            }
        }
        return (acceptor, port)
    }

    func testEchoOverTLSOnTheLoop() throws {
        let loop = try EventLoop()
        let certificate = try TLSCertificate.selfSigned(commonName: "master", dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"])
        let (acceptor, port) = try server(loop, certificate: certificate) { server in
            server.onRead = { server.write($0) }
        }
        let message = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 % 251) }
        var echoed: [UInt8] = []
        let session = try TLSSession(context: try TLSContext.pinningClient())
        let client = try StreamChannel.connecting(try TCPSocket.connect(host: "127.0.0.1", port: port), loop: loop) { _ in }
        client.install(codec: session, replaying: [])
        client.write(Array(message[..<1000])) // starts the handshake; sent once it finished
        client.write(Array(message[1000...]))
        client.onRead = { bytes in
            echoed += bytes
            if echoed.count >= message.count { client.closeAfterFlush() }
        }
        client.onClose = { _ in loop.stop() }
        runLoop(loop)
        acceptor.close()
        XCTAssertEqual(echoed, message)
        XCTAssertEqual(session.peerFingerprint, certificate.fingerprint)
    }

    func testAPlainPeerIsClosedAndDeliversNothing() throws {
        let loop = try EventLoop()
        let certificate = try TLSCertificate.selfSigned(commonName: "master", dnsNames: [], ipAddresses: [])
        var delivered: [UInt8] = []
        let context = try TLSContext.server(certificate: certificate)
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0)
        let port = listener.localPort
        let acceptor = try Acceptor(listener: listener, loop: loop) { accepted in
            guard let channel = try? StreamChannel(socket: accepted.socket, loop: loop), let session = try? TLSSession(context: context)
            else { return XCTFail("no channel") }
            channel.install(codec: session, replaying: [])
            channel.onRead = { delivered += $0 }
        }
        var answer: [UInt8] = []
        let client = try StreamChannel.connecting(try TCPSocket.connect(host: "127.0.0.1", port: port), loop: loop) { _ in }
        client.write(Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        client.onRead = { answer += $0 }
        client.onClose = { _ in loop.stop() }
        runLoop(loop)
        acceptor.close()
        XCTAssertEqual(delivered, [], "nothing of a plain request reaches the owner")
        XCTAssertTrue(answer.isEmpty || answer.first == 0x15, "nothing, or a TLS alert, then the end of the stream")
    }
}
