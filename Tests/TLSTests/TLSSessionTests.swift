import XCTest

@testable import TLS

/// Two of our TLS sessions, a server on a self-signed certificate and a pinning client, wired
/// to each other in memory: the handshake, data both ways (written before and after it
/// finished), close_notify, and what a broken stream does.
final class TLSSessionTests: XCTestCase {
    private static let certificate = Result {
        try TLSCertificate.selfSigned(commonName: "till-1", dnsNames: ["till-1", "till-1.local"], ipAddresses: ["127.0.0.1"])
    }

    /// Carries each side's output to the other until neither has anything to say; returns what
    /// each received.
    private func pump(
        _ client: TLSSession, _ server: TLSSession, first: [UInt8]
    ) -> (client: [UInt8], server: [UInt8]) {
        var toServer = first
        var toClient: [UInt8] = []
        var atClient: [UInt8] = []
        var atServer: [UInt8] = []
        for _ in 0..<20 where !toServer.isEmpty || !toClient.isEmpty {
            if !toServer.isEmpty {
                let out = server.decode(toServer)
                toServer = []
                atServer += out.received
                toClient += out.reply
            }
            if !toClient.isEmpty {
                let out = client.decode(toClient)
                toClient = []
                atClient += out.received
                toServer += out.reply
            }
        }
        return (atClient, atServer)
    }

    func testHandshakeCarriesDataBothWaysAndThePinnedFingerprintMatches() throws {
        let certificate = try Self.certificate.get()
        XCTAssertEqual(certificate.fingerprint.count, 32)
        XCTAssertEqual(certificate.fingerprintText.split(separator: ":").count, 32)
        let server = try TLSSession(context: try TLSContext.server(certificate: certificate))
        let client = try TLSSession(context: try TLSContext.pinningClient())
        // The server's answer is written before the handshake finished: it waits.
        XCTAssertEqual(try server.encode(Array("early".utf8)), [])
        let hello = client.start()
        XCTAssertEqual(hello.first, 0x16, "a TLS handshake record")
        let first = pump(client, server, first: hello)
        XCTAssertTrue(client.isEstablished)
        XCTAssertTrue(server.isEstablished)
        XCTAssertEqual(client.peerFingerprint, certificate.fingerprint)
        XCTAssertTrue(["TLSv1.3", "TLSv1.2"].contains(client.protocolVersion))
        XCTAssertEqual(String(decoding: first.client, as: UTF8.self), "early")

        let request = Array("GET / HTTP/1.1\r\n\r\n".utf8) + [UInt8](repeating: 0x41, count: 100_000)
        let sealed = try client.encode(request)
        XCTAssertFalse(sealed.isEmpty)
        XCTAssertNil(sealed.firstRange(of: Array("GET /".utf8)), "the request crosses the wire encrypted")
        let second = pump(client, server, first: sealed)
        XCTAssertEqual(second.server, request)

        // One byte at a time: records are reassembled.
        var received: [UInt8] = []
        for byte in try server.encode(Array("reply".utf8)) { received += client.decode([byte]).received }
        XCTAssertEqual(String(decoding: received, as: UTF8.self), "reply")

        let notify = server.closing()
        XCTAssertFalse(notify.isEmpty)
        XCTAssertNil(client.decode(notify).failure)
        XCTAssertFalse(client.isEstablished, "the peer's close_notify ends the session")
        XCTAssertThrowsError(try server.encode([1]))
    }

    func testPlainHTTPToAServerFailsTheHandshake() throws {
        let server = try TLSSession(context: try TLSContext.server(certificate: try Self.certificate.get()))
        let out = server.decode(Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        XCTAssertNotNil(out.failure)
        XCTAssertNotNil(server.failure)
        XCTAssertEqual(out.received, [])
        // OpenSSL sends no alert to what is not a TLS record at all ("wrong version number").
        XCTAssertTrue(out.reply.isEmpty || out.reply.first == 0x15, "nothing, or a TLS alert record")
        XCTAssertNotNil(server.decode([0x16]).failure, "a failed session stays failed")
    }

    func testADamagedRecordFailsTheSession() throws {
        let certificate = try Self.certificate.get()
        let server = try TLSSession(context: try TLSContext.server(certificate: certificate))
        let client = try TLSSession(context: try TLSContext.pinningClient())
        _ = pump(client, server, first: client.start())
        var sealed = try client.encode(Array("order".utf8))
        sealed[sealed.count - 1] ^= 0x01
        let out = server.decode(sealed)
        XCTAssertNotNil(out.failure)
        XCTAssertEqual(out.received, [], "nothing of a record that fails its tag reaches the owner")
    }

    func testCertificateRoundTripsThroughPEMAndRefusesAForeignKey() throws {
        let certificate = try Self.certificate.get()
        let again = try TLSCertificate(certificatePEM: certificate.certificatePEM, privateKeyPEM: certificate.privateKeyPEM)
        XCTAssertEqual(again.fingerprint, certificate.fingerprint)
        XCTAssertTrue(String(decoding: certificate.privateKeyPEM, as: UTF8.self).hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let other = try TLSCertificate.selfSigned(commonName: "other", dnsNames: [], ipAddresses: [])
        XCTAssertNotEqual(other.fingerprint, certificate.fingerprint)
        XCTAssertThrowsError(try TLSCertificate(certificatePEM: certificate.certificatePEM, privateKeyPEM: other.privateKeyPEM))
        XCTAssertThrowsError(try TLSCertificate(certificatePEM: Array("junk".utf8), privateKeyPEM: certificate.privateKeyPEM))
    }
}
