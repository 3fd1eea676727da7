import Crypto
import Foundation

/// The master a slave paired with, as kept in `DATA/master.trust` (Docs/SECURITY.md): the
/// master's node id and static public key, the store, when it was paired and a digest of the
/// pairing code used, and the master's earlier keys after a key handover.
///
/// Only a link whose Noise handshake proves the master holds ``publicKey`` ever reaches the
/// slave's engine. The file is JSON:
///
/// ```
/// {"store":"shop1","master":"ABCD-…","publicKey":"<base64 of 32 bytes>","pairedAtMillis":1700000000000,
///  "codeDigest":"<hex SHA-256 of the 10 code bytes>","previousKeys":[{"master":"…","publicKey":"…"}]}
/// ```
public struct MasterTrust: Equatable, Sendable {
    /// A key the master used before a handover.
    public struct PreviousKey: Equatable, Sendable {
        /// The node id of ``publicKey``.
        public var master: String
        /// The 32-byte X25519 public key.
        public var publicKey: [UInt8]

        /// A previous key; its id is derived from it.
        public init(publicKey: [UInt8]) {
            self.master = NodeIdentity.nodeId(publicKey: publicKey)
            self.publicKey = publicKey
        }
    }

    /// How many earlier master keys are remembered (the newest ones).
    public static let previousKeysKept = 4

    /// The store the master announced when the slave paired with it.
    public var store: String?
    /// The master's node id (derived from ``publicKey``).
    public private(set) var master: String
    /// The master's 32-byte static X25519 public key: the IK responder key of every link.
    public private(set) var publicKey: [UInt8]
    /// When the slave paired, in wall-clock milliseconds since the Unix epoch.
    public var pairedAtMillis: Int64
    /// Lowercase hex SHA-256 of the pairing code's 10 bytes: tells a repeated `--pair` of the
    /// same code (ignored) from a new one (pairs anew). The code itself is never stored.
    public var codeDigest: String
    /// The master's earlier keys, oldest first.
    public private(set) var previousKeys: [PreviousKey]

    /// A trust in the master holding `publicKey` (32 bytes).
    public init(store: String?, publicKey: [UInt8], pairedAtMillis: Int64, codeDigest: String, previousKeys: [PreviousKey] = []) {
        self.store = store
        self.master = NodeIdentity.nodeId(publicKey: publicKey)
        self.publicKey = publicKey
        self.pairedAtMillis = pairedAtMillis
        self.codeDigest = codeDigest
        self.previousKeys = previousKeys
    }

    /// The digest kept for a pairing code: lowercase hex SHA-256 of its bytes.
    public static func codeDigest(ofCodeBytes bytes: [UInt8]) -> String {
        SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
    }

    /// The master's current id and every earlier one: the ids a discovered master may announce
    /// in its TXT record (`id=`, `previd=`).
    public var knownMasterIds: Set<String> {
        Set([master] + previousKeys.map(\.master))
    }

    /// Takes `newKey` as the master's key after a handover signed by the current one; the
    /// current key joins ``previousKeys``. Returns false (nothing changed) when `newKey` is
    /// already the current key.
    public mutating func handOver(to newKey: [UInt8]) -> Bool {
        guard newKey != publicKey else { return false }
        var earlier = previousKeys.filter { $0.publicKey != publicKey && $0.publicKey != newKey }
        earlier.append(PreviousKey(publicKey: publicKey))
        previousKeys = Array(earlier.suffix(Self.previousKeysKept))
        publicKey = newKey
        master = NodeIdentity.nodeId(publicKey: newKey)
        return true
    }
}

extension MasterTrust: Codable {
    private enum CodingKeys: String, CodingKey {
        case store, master, publicKey, pairedAtMillis, codeDigest, previousKeys
    }

    /// A damaged or altered file (a key that is not 32 bytes, an id that is not its key's) is
    /// an error, never trusted.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let key = try Self.key(c.decode(String.self, forKey: .publicKey), decoding: c, .publicKey)
        let id = try c.decode(String.self, forKey: .master)
        guard id == NodeIdentity.nodeId(publicKey: key) else {
            throw DecodingError.dataCorruptedError(forKey: .master, in: c, debugDescription: "the id is not the key's")
        }
        let digest = try c.decode(String.self, forKey: .codeDigest)
        guard digest.utf8.count == 64, digest.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
        else {
            throw DecodingError.dataCorruptedError(forKey: .codeDigest, in: c, debugDescription: "not 64 hex digits")
        }
        let earlier = try c.decodeIfPresent([PreviousKey].self, forKey: .previousKeys) ?? []
        self.init(
            store: try c.decodeIfPresent(String.self, forKey: .store), publicKey: key,
            pairedAtMillis: try c.decode(Int64.self, forKey: .pairedAtMillis), codeDigest: digest, previousKeys: earlier)
    }

    /// Encodes every member (`store` as `null` when unknown).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(store, forKey: .store)
        try c.encode(master, forKey: .master)
        try c.encode(Data(publicKey).base64EncodedString(), forKey: .publicKey)
        try c.encode(pairedAtMillis, forKey: .pairedAtMillis)
        try c.encode(codeDigest, forKey: .codeDigest)
        try c.encode(previousKeys, forKey: .previousKeys)
    }

    fileprivate static func key<K: CodingKey>(
        _ text: String, decoding c: KeyedDecodingContainer<K>, _ key: K
    ) throws -> [UInt8] {
        guard let data = Data(base64Encoded: text), data.count == 32 else {
            throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: "not the base64 of 32 bytes")
        }
        return Array(data)
    }
}

extension MasterTrust.PreviousKey: Codable {
    private enum CodingKeys: String, CodingKey {
        case master, publicKey
    }

    /// An earlier key; its id must be the key's.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let key = try MasterTrust.key(c.decode(String.self, forKey: .publicKey), decoding: c, .publicKey)
        self.init(publicKey: key)
        guard try c.decode(String.self, forKey: .master) == master else {
            throw DecodingError.dataCorruptedError(forKey: .master, in: c, debugDescription: "the id is not the key's")
        }
    }

    /// Encodes the id and the key (base64).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(master, forKey: .master)
        try c.encode(Data(publicKey).base64EncodedString(), forKey: .publicKey)
    }
}
