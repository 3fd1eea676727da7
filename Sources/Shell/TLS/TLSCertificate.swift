internal import COpenSSL

/// A certificate and its private key, as PEM, with the certificate's SHA-256 fingerprint (what
/// a person compares with what a browser shows). Made self-signed at a node's first start for
/// the dashboard, or read back from the data directory.
public struct TLSCertificate: Equatable, Sendable {
    /// The certificate (`-----BEGIN CERTIFICATE-----`).
    public let certificatePEM: [UInt8]
    /// The private key (PKCS #8, `-----BEGIN PRIVATE KEY-----`); keep it readable by the owner only.
    public let privateKeyPEM: [UInt8]
    /// SHA-256 of the certificate's DER encoding.
    public let fingerprint: [UInt8]

    /// Reads a certificate and its key; throws when either does not parse or they do not belong
    /// together.
    public init(certificatePEM: [UInt8], privateKeyPEM: [UInt8]) throws {
        let parsed = try Self.parse(certificatePEM: certificatePEM, privateKeyPEM: privateKeyPEM)
        defer {
            X509_free(parsed.certificate)
            EVP_PKEY_free(parsed.key)
        }
        self.certificatePEM = certificatePEM
        self.privateKeyPEM = privateKeyPEM
        fingerprint = try Self.sha256(of: parsed.certificate)
    }

    /// The fingerprint as browsers and `openssl x509 -fingerprint -sha256` show it:
    /// `AB:CD:...` (32 bytes in upper-case hex, colon-separated).
    public var fingerprintText: String { Self.text(fingerprint) }

    /// `bytes` as colon-separated upper-case hex.
    public static func text(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789ABCDEF")
        return bytes.map { String([digits[Int($0 >> 4)], digits[Int($0 & 15)]]) }.joined(separator: ":")
    }

    /// A new self-signed certificate with a new EC P-256 key, for `commonName`, valid from a day
    /// ago for `validDays`, naming `dnsNames` and `ipAddresses` as its subject alternative names
    /// (RFC 5280 4.2.1.6) and signed with ECDSA SHA-256.
    public static func selfSigned(
        commonName: String, dnsNames: [String], ipAddresses: [String], validDays: Int = 3650
    ) throws -> TLSCertificate {
        ERR_clear_error()
        guard let key = ordersync_ec_p256_key() else { throw TLSError.fromQueue("make a P-256 key") }
        defer { EVP_PKEY_free(key) }
        guard let certificate = X509_new() else { throw TLSError.fromQueue("make a certificate") }
        defer { X509_free(certificate) }
        // RFC 5280 4.1.2.1: version 3 is the value 2. 4.1.2.2: a positive serial, at most 20 octets.
        var serial = [UInt8](repeating: 0, count: 16)
        guard X509_set_version(certificate, 2) == 1, RAND_bytes(&serial, Int32(serial.count)) == 1 else {
            throw TLSError.fromQueue("make a certificate")
        }
        serial[0] &= 0x7F
        serial[0] |= 0x01
        let number = BN_bin2bn(serial, Int32(serial.count), nil)
        defer { BN_free(number) }
        let name = X509_get_subject_name(certificate)
        guard BN_to_ASN1_INTEGER(number, X509_get_serialNumber(certificate)) != nil,
            X509_gmtime_adj(X509_getm_notBefore(certificate), -86_400) != nil,
            X509_gmtime_adj(X509_getm_notAfter(certificate), validDays * 86_400) != nil,
            ordersync_x509_name_add_text(name, "CN", String(commonName.prefix(64))) == 1,
            X509_set_issuer_name(certificate, name) == 1, X509_set_pubkey(certificate, key) == 1
        else { throw TLSError.fromQueue("make a certificate") }
        let names = dnsNames.map { "DNS:" + $0 } + ipAddresses.map { "IP:" + $0 }
        if !names.isEmpty {
            guard let ext = X509V3_EXT_conf_nid(nil, nil, NID_subject_alt_name, names.joined(separator: ",")) else {
                throw TLSError.fromQueue("name \(names.joined(separator: ",")) in a certificate")
            }
            defer { X509_EXTENSION_free(ext) }
            guard X509_add_ext(certificate, ext, -1) == 1 else { throw TLSError.fromQueue("add the subject alternative names") }
        }
        guard X509_sign(certificate, key, EVP_sha256()) > 0 else { throw TLSError.fromQueue("sign the certificate") }
        let certificatePEM = try pem("write the certificate") { PEM_write_bio_X509($0, certificate) }
        let keyPEM = try pem("write the key") { PEM_write_bio_PrivateKey($0, key, nil, nil, 0, nil, nil) }
        return try TLSCertificate(certificatePEM: certificatePEM, privateKeyPEM: keyPEM)
    }

    // MARK: OpenSSL objects

    /// The certificate and key as OpenSSL objects; the caller frees both.
    static func parse(certificatePEM: [UInt8], privateKeyPEM: [UInt8]) throws -> (certificate: OpaquePointer, key: OpaquePointer) {
        ERR_clear_error()
        guard let certificate = try read(certificatePEM, "read the certificate", { PEM_read_bio_X509($0, nil, nil, nil) }) else {
            throw TLSError.fromQueue("read the certificate", otherwise: "no PEM certificate")
        }
        guard let key = try read(privateKeyPEM, "read the private key", { PEM_read_bio_PrivateKey($0, nil, nil, nil) }) else {
            X509_free(certificate)
            throw TLSError.fromQueue("read the private key", otherwise: "no PEM private key")
        }
        guard X509_check_private_key(certificate, key) == 1 else {
            X509_free(certificate)
            EVP_PKEY_free(key)
            throw TLSError.fromQueue("check the key", otherwise: "the private key does not belong to the certificate")
        }
        return (certificate, key)
    }

    /// SHA-256 of `certificate`'s DER encoding.
    static func sha256(of certificate: OpaquePointer) throws -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard X509_digest(certificate, EVP_sha256(), &digest, &length) == 1 else { throw TLSError.fromQueue("hash the certificate") }
        return Array(digest.prefix(Int(length)))
    }

    private static func read(_ pem: [UInt8], _ operation: String, _ body: (OpaquePointer) -> OpaquePointer?) throws -> OpaquePointer? {
        try pem.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { throw TLSError.fromQueue(operation) }
            defer { BIO_free(bio) }
            return body(bio)
        }
    }

    private static func pem(_ operation: String, _ body: (OpaquePointer) -> Int32) throws -> [UInt8] {
        guard let bio = BIO_new(BIO_s_mem()) else { throw TLSError.fromQueue(operation) }
        defer { BIO_free(bio) }
        guard body(bio) == 1 else { throw TLSError.fromQueue(operation) }
        return MemoryBuffer.drain(bio)
    }
}

/// Reading an OpenSSL memory BIO.
enum MemoryBuffer {
    /// Everything waiting in `bio`.
    static func drain(_ bio: OpaquePointer) -> [UInt8] {
        let count = Int(BIO_ctrl_pending(bio))
        guard count > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: count)
        let read = BIO_read(bio, &bytes, Int32(count))
        return read > 0 ? Array(bytes.prefix(Int(read))) : []
    }
}
