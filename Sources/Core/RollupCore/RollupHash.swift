internal import CryptoPrimitives

/// The roll-up's hashes (Docs/OPERATIONS.md, "Roll-up into head office"): each entry's hash
/// is SHA-256 of its canonical bytes; the rolling hash chains them, rolling(n) =
/// SHA-256(rolling(n-1) || hash(n)), from a fixed start per store and lineage. Equal rolling
/// hashes at seq N mean equal journals 1...N.
public enum RollupHash {
    /// SHA-256 of `entry.canonicalBytes`.
    public static func entry(_ entry: RollupEntry) -> [UInt8] {
        Digest.sha256(entry.canonicalBytes)
    }

    /// SHA-256(previous || hash).
    public static func rolling(previous: [UInt8], hash: [UInt8]) -> [UInt8] {
        var h = SHA256Hasher()
        h.update(previous)
        h.update(hash)
        return h.finalize()
    }

    /// The rolling hash before seq 1 of `lineage` of store `storeId`: SHA-256 of the tag
    /// `OSRS1`, then the store id and the lineage, each as a 4-byte big-endian length and its
    /// UTF-8.
    public static func start(storeId: String, lineage: String) -> [UInt8] {
        var bytes = Array("OSRS1".utf8)
        for field in [storeId, lineage] {
            let utf8 = Array(field.utf8)
            let n = UInt32(truncatingIfNeeded: utf8.count)
            bytes += [
                UInt8(truncatingIfNeeded: n >> 24), UInt8(truncatingIfNeeded: n >> 16), UInt8(truncatingIfNeeded: n >> 8),
                UInt8(truncatingIfNeeded: n),
            ]
            bytes += utf8
        }
        return Digest.sha256(bytes)
    }

    /// Lower-case hex, for JSON answers and logs.
    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
