internal import COpenSSL

/// The settings TLS sessions share (OpenSSL's `SSL_CTX`): a server's certificate, or a client
/// that checks nothing itself and lets its owner compare the server's fingerprint. TLS 1.2 and
/// 1.3 only, OpenSSL's default ciphers.
public final class TLSContext {
    let context: OpaquePointer
    /// `true` for a server's context.
    public let isServer: Bool

    /// A context for one side, TLS 1.2 at least.
    private init(server: Bool) throws {
        ERR_clear_error()
        guard let made = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method()) else {
            throw TLSError.fromQueue("make a TLS context")
        }
        context = made
        isServer = server
        // RFC 8996: TLS 1.0 and 1.1 are deprecated; "MUST NOT" be negotiated.
        guard ordersync_ssl_ctx_set_min_tls12(made) == 1 else { throw TLSError.fromQueue("set TLS 1.2 as the minimum") }
        ordersync_ssl_ctx_set_modes(made)
    }

    /// A server presenting `certificate`.
    public static func server(certificate: TLSCertificate) throws -> TLSContext {
        let made = try TLSContext(server: true)
        let parsed = try TLSCertificate.parse(certificatePEM: certificate.certificatePEM, privateKeyPEM: certificate.privateKeyPEM)
        defer {
            X509_free(parsed.certificate)
            EVP_PKEY_free(parsed.key)
        }
        guard SSL_CTX_use_certificate(made.context, parsed.certificate) == 1, SSL_CTX_use_PrivateKey(made.context, parsed.key) == 1,
            SSL_CTX_check_private_key(made.context) == 1
        else { throw TLSError.fromQueue("use the certificate") }
        return made
    }

    /// A client that accepts any certificate: its owner checks
    /// ``TLSSession/peerFingerprint`` (tests, tools pinning a fingerprint).
    public static func pinningClient() throws -> TLSContext {
        let made = try TLSContext(server: false)
        SSL_CTX_set_verify(made.context, SSL_VERIFY_NONE, nil)
        return made
    }

    deinit { SSL_CTX_free(context) }
}
