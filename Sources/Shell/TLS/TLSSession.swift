internal import COpenSSL
import EventLoopIO

/// One TLS connection over memory buffers (OpenSSL's `SSL` with two memory BIOs), never
/// touching a socket: the bytes read from the peer go in through ``decode(_:)``, and what must
/// be sent comes out of ``decode(_:)``, ``encode(_:)`` and ``closing()``. A ``StreamChannel``
/// drives it on the loop as its ``StreamCodec``; two sessions can also be wired to each other
/// in memory (tests).
///
/// What the owner writes before the handshake finished waits and goes out encrypted when it
/// did (a client's first write starts the handshake). A failed handshake or a damaged record is final: the session answers with TLS's alert
/// and reports ``failure``.
public final class TLSSession: StreamCodec {
    private enum State: Equatable {
        case handshaking
        case established
        /// close_notify sent or received: nothing more is sent.
        case closed
        case failed(TLSError)
    }

    private let ssl: OpaquePointer
    /// What came from the peer, for OpenSSL to read.
    private let incoming: OpaquePointer
    /// What OpenSSL wrote, for us to send.
    private let outgoing: OpaquePointer
    private var state = State.handshaking
    private var waiting: [UInt8] = []

    /// A session on `context`'s side (server or client). A client sends its first flight with
    /// ``start()``.
    public init(context: TLSContext) throws {
        ERR_clear_error()
        guard let ssl = SSL_new(context.context) else { throw TLSError.fromQueue("start a TLS session") }
        guard let incoming = BIO_new(BIO_s_mem()), let outgoing = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            throw TLSError.fromQueue("start a TLS session")
        }
        // SSL_set_bio: "the ownership of the BIOs is transferred to ssl": SSL_free frees them.
        SSL_set_bio(ssl, incoming, outgoing)
        if context.isServer { SSL_set_accept_state(ssl) } else { SSL_set_connect_state(ssl) }
        self.ssl = ssl
        self.incoming = incoming
        self.outgoing = outgoing
    }

    deinit { SSL_free(ssl) }

    /// `true` once the handshake finished (and until the session closed or failed).
    public var isEstablished: Bool { state == .established }

    /// Why the session cannot go on, once it cannot.
    public var failure: TLSError? {
        if case .failed(let error) = state { return error }
        return nil
    }

    /// The negotiated protocol, e.g. `TLSv1.3`.
    public var protocolVersion: String { String(cString: SSL_get_version(ssl)) }

    /// SHA-256 of the certificate the peer presented, once it did.
    public var peerFingerprint: [UInt8]? {
        guard let certificate = SSL_get1_peer_certificate(ssl) else { return nil }
        defer { X509_free(certificate) }
        return try? TLSCertificate.sha256(of: certificate)
    }

    /// A client's first flight (its ClientHello); nothing for a server.
    public func start() -> [UInt8] {
        if state == .handshaking { handshake() }
        return MemoryBuffer.drain(outgoing)
    }

    // MARK: StreamCodec

    public func decode(_ bytes: [UInt8]) -> StreamCodecOutput {
        guard state == .handshaking || state == .established else {
            return StreamCodecOutput(failure: failure.map { "\($0)" })
        }
        let stored = bytes.withUnsafeBytes { BIO_write(incoming, $0.baseAddress, Int32($0.count)) }
        guard stored == Int32(bytes.count) else {
            fail(TLSError(operation: "buffer", detail: "a memory buffer refused \(bytes.count) bytes"))
            return StreamCodecOutput(reply: MemoryBuffer.drain(outgoing), failure: failure.map { "\($0)" })
        }
        if state == .handshaking { handshake() }
        var received: [UInt8] = []
        if state == .established {
            if !waiting.isEmpty {
                let plain = waiting
                waiting = []
                seal(plain)
            }
            readRecords(into: &received)
        }
        return StreamCodecOutput(received: received, reply: MemoryBuffer.drain(outgoing), failure: failure.map { "\($0)" })
    }

    public func encode(_ bytes: [UInt8]) throws -> [UInt8] {
        switch state {
        case .handshaking:
            // Kept until the handshake finished; a client's first write sends its ClientHello.
            waiting += bytes
            handshake()
            if let failure { throw failure }
            return MemoryBuffer.drain(outgoing)
        case .established:
            seal(bytes)
            if let failure { throw failure }
            return MemoryBuffer.drain(outgoing)
        case .closed:
            throw TLSError(operation: "write", detail: "the TLS session is closed")
        case .failed(let error):
            throw error
        }
    }

    public func closing() -> [UInt8] {
        guard state == .established else { return [] }
        ERR_clear_error()
        // SSL_shutdown: "sends a close_notify alert to the peer"; 0 means ours went and the peer's
        // is not in yet, which we do not wait for (the channel closes the socket after it).
        _ = SSL_shutdown(ssl)
        state = .closed
        return MemoryBuffer.drain(outgoing)
    }

    // MARK: OpenSSL

    /// Takes the handshake as far as the bytes in hand allow.
    private func handshake() {
        ERR_clear_error()
        let result = SSL_do_handshake(ssl)
        if result == 1 {
            state = .established
            return
        }
        let code = SSL_get_error(ssl, result)
        if code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE { return }
        fail(TLSError.fromQueue("handshake", otherwise: "SSL_do_handshake error \(code)"))
    }

    /// Decrypts every whole record that arrived.
    private func readRecords(into received: inout [UInt8]) {
        var chunk = [UInt8](repeating: 0, count: 16 << 10)
        while state == .established {
            ERR_clear_error()
            let count = SSL_read(ssl, &chunk, Int32(chunk.count))
            if count > 0 {
                received += chunk.prefix(Int(count))
                continue
            }
            let code = SSL_get_error(ssl, count)
            switch code {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return
            case SSL_ERROR_ZERO_RETURN: state = .closed // the peer's close_notify
            default: fail(TLSError.fromQueue("read", otherwise: "SSL_read error \(code)"))
            }
        }
    }

    /// Encrypts `bytes` into the outgoing buffer (a memory BIO takes it all).
    private func seal(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        ERR_clear_error()
        let count = bytes.withUnsafeBytes { SSL_write(ssl, $0.baseAddress, Int32($0.count)) }
        if count <= 0 { fail(TLSError.fromQueue("write", otherwise: "SSL_write error \(SSL_get_error(ssl, count))")) }
    }

    /// The session is broken for good: what waited to be sent is dropped.
    private func fail(_ error: TLSError) {
        state = .failed(error)
        waiting = []
    }
}
