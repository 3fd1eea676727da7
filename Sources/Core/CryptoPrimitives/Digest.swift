internal import COpenSSL

/// SHA-1, SHA-256, HMAC-SHA256 and HKDF-SHA256 on OpenSSL's libcrypto, over byte arrays.
///
/// The digests are fetched from OpenSSL's default provider once (`EVP_MD_fetch`), so a call
/// costs the digest, not a provider lookup. A failure of OpenSSL here (no memory, no default
/// provider) is not something a caller could handle: it traps with OpenSSL's own message.
public enum Digest {
    /// SHA-256's output, 32 bytes.
    public static let sha256Length = 32
    /// SHA-1's output, 20 bytes.
    public static let sha1Length = 20

    /// SHA-1 (FIPS 180-4): only for RFC 6455's `Sec-WebSocket-Accept`, which names it.
    public static func sha1(_ data: [UInt8]) -> [UInt8] {
        oneShot(OpenSSLAlgorithms.sha1, data, length: sha1Length)
    }

    /// SHA-256 (FIPS 180-4).
    public static func sha256(_ data: [UInt8]) -> [UInt8] {
        oneShot(OpenSSLAlgorithms.sha256, data, length: sha256Length)
    }

    /// HMAC-SHA256 (RFC 2104, FIPS 198-1) of `data` under `key` (any length).
    public static func hmacSHA256(key: [UInt8], data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: sha256Length)
        var outLength: UInt32 = 0
        // OpenSSL 3 takes a null key as "no key set"; an empty key is one byte not read.
        let keyLength = key.count
        let keyBytes: [UInt8] = key.isEmpty ? [0] : key
        let result = keyBytes.withUnsafeBytes { k in
            data.withUnsafeBytes { d in
                HMAC(
                    OpenSSLAlgorithms.sha256, k.baseAddress, Int32(keyLength),
                    d.baseAddress?.assumingMemoryBound(to: UInt8.self), d.count, &out, &outLength)
            }
        }
        OpenSSLAlgorithms.check(result != nil && outLength == UInt32(sha256Length), "HMAC-SHA256")
        return out
    }

    /// HKDF-SHA256 (RFC 5869): extract with `salt` (an empty salt is 32 zero bytes, as 2.2
    /// says), then expand with `info` to `outputByteCount` bytes (at most 255 * 32).
    public static func hkdfSHA256(inputKeyMaterial: [UInt8], salt: [UInt8], info: [UInt8], outputByteCount: Int) -> [UInt8] {
        precondition(outputByteCount >= 0 && outputByteCount <= 255 * sha256Length, "HKDF-SHA256 gives at most 8160 bytes")
        let pseudoRandomKey = hmacSHA256(key: salt.isEmpty ? [UInt8](repeating: 0, count: sha256Length) : salt, data: inputKeyMaterial)
        var output: [UInt8] = []
        output.reserveCapacity(outputByteCount + sha256Length)
        var block: [UInt8] = []
        var counter: UInt8 = 1
        while output.count < outputByteCount {
            block = hmacSHA256(key: pseudoRandomKey, data: block + info + [counter])
            output += block
            counter &+= 1
        }
        return Array(output.prefix(outputByteCount))
    }

    /// `EVP_Digest` with a fetched digest.
    private static func oneShot(_ md: OpaquePointer, _ data: [UInt8], length: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: length)
        var outLength: UInt32 = 0
        let ok = data.withUnsafeBytes { d in EVP_Digest(d.baseAddress, d.count, &out, &outLength, md, nil) }
        OpenSSLAlgorithms.check(ok == 1 && outLength == UInt32(length), "EVP_Digest")
        return out
    }
}

/// Incremental SHA-256: `update` any number of times, then `finalize` once. Not copyable (it owns
/// an OpenSSL digest context, freed when the hasher goes away).
public struct SHA256Hasher: ~Copyable {
    private let context: OpaquePointer

    /// A hasher over no bytes yet.
    public init() {
        guard let context = EVP_MD_CTX_new() else { preconditionFailure("EVP_MD_CTX_new: out of memory") }
        OpenSSLAlgorithms.check(EVP_DigestInit_ex(context, OpenSSLAlgorithms.sha256, nil) == 1, "EVP_DigestInit_ex")
        self.context = context
    }

    deinit { EVP_MD_CTX_free(context) }

    /// Adds `data` to the bytes hashed.
    public mutating func update(_ data: [UInt8]) {
        let ok = data.withUnsafeBytes { d in EVP_DigestUpdate(context, d.baseAddress, d.count) }
        OpenSSLAlgorithms.check(ok == 1, "EVP_DigestUpdate")
    }

    /// SHA-256 of every byte added.
    public consuming func finalize() -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Digest.sha256Length)
        var outLength: UInt32 = 0
        OpenSSLAlgorithms.check(EVP_DigestFinal_ex(context, &out, &outLength) == 1, "EVP_DigestFinal_ex")
        return out
    }
}

/// Compares two byte strings in time that depends on their lengths only (`CRYPTO_memcmp`), for
/// secrets and digests of secrets.
public func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    if a.isEmpty { return true }
    return a.withUnsafeBytes { x in b.withUnsafeBytes { y in CRYPTO_memcmp(x.baseAddress, y.baseAddress, a.count) == 0 } }
}

/// The OpenSSL algorithms fetched once, and how a failure is reported.
enum OpenSSLAlgorithms {
    // Fetched once and never freed; an `EVP_MD` is immutable and OpenSSL allows its use from
    // any thread.
    nonisolated(unsafe) static let sha256: OpaquePointer = fetch("SHA256")
    nonisolated(unsafe) static let sha1: OpaquePointer = fetch("SHA1")

    private static func fetch(_ name: String) -> OpaquePointer {
        guard let md = EVP_MD_fetch(nil, name, nil) else {
            preconditionFailure("OpenSSL has no \(name) digest (EVP_MD_fetch): \(lastError())")
        }
        return md
    }

    /// Traps with OpenSSL's error queue when `ok` is false: these calls fail only without memory
    /// or with a broken OpenSSL, never on any input of ours.
    static func check(_ ok: Bool, _ call: String) {
        if !ok { preconditionFailure("OpenSSL's \(call) failed: \(lastError())") }
    }

    /// OpenSSL's last queued error as text (and the queue cleared).
    static func lastError() -> String {
        let code = ERR_get_error()
        ERR_clear_error()
        guard code != 0 else { return "no error queued" }
        var text = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &text, text.count)
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
