internal import CryptoPrimitives

/// A node's id, derived from its static public key: the first 20 bytes of the SHA-256 of the
/// 32-byte X25519 public key, in RFC 4648 base32 (no padding), in groups of four
/// (`ABCD-EFGH-...`, 8 groups). Pure: the node's key files are `NodeIdentity`'s.
public enum NodeId {
    /// The node id of a 32-byte X25519 public key.
    public static func of(publicKey: [UInt8]) -> String {
        let digest = Array(Digest.sha256(publicKey).prefix(20))
        let text = Array(base32(digest))
        return stride(from: 0, to: text.count, by: 4).map { String(text[$0..<min($0 + 4, text.count)]) }
            .joined(separator: "-")
    }

    /// RFC 4648 section 6 base32 without padding ("The Base 32 Alphabet": A-Z then 2-7).
    public static func base32(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
        var out = ""
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = (buffer << 8) | UInt32(byte)
            bits += 8
            while bits >= 5 {
                out.append(alphabet[Int((buffer >> UInt32(bits - 5)) & 31)])
                bits -= 5
            }
        }
        if bits > 0 {
            out.append(alphabet[Int((buffer << UInt32(5 - bits)) & 31)])
        }
        return out
    }
}
