internal import CryptoPrimitives
import Foundation
import JSON

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
            self.master = NodeId.of(publicKey: publicKey)
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
        self.master = NodeId.of(publicKey: publicKey)
        self.publicKey = publicKey
        self.pairedAtMillis = pairedAtMillis
        self.codeDigest = codeDigest
        self.previousKeys = previousKeys
    }

    /// The digest kept for a pairing code: lowercase hex SHA-256 of its bytes.
    public static func codeDigest(ofCodeBytes bytes: [UInt8]) -> String {
        Digest.sha256(bytes).map { String(format: "%02x", $0) }.joined()
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
        master = NodeId.of(publicKey: newKey)
        return true
    }
}

extension MasterTrust: NodeJSONCodable {
    /// Every member, in the order of their names as the file has always had them (`store` as
    /// `null` when unknown; keys as base64).
    public var jsonValue: JSONValue {
        nodeJSONObject([
            "codeDigest": codeDigest, "master": master, "pairedAtMillis": pairedAtMillis, "previousKeys": previousKeys,
            "publicKey": Data(publicKey).base64EncodedString(), "store": store,
        ])
    }

    /// A damaged or altered file (a key that is not 32 bytes, an id that is not its key's) is
    /// an error, never trusted.
    public init(json: JSONValue) throws(NodeJSONError) {
        let f = try NodeJSONFields(json)
        let key = try Self.key(f, "publicKey")
        guard try f.decode("master", as: String.self) == NodeId.of(publicKey: key) else {
            throw NodeJSONError(path: f.path(of: "master"), "the id is not the key's")
        }
        let digest: String = try f.decode("codeDigest")
        guard digest.utf8.count == 64, digest.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
        else {
            throw NodeJSONError(path: f.path(of: "codeDigest"), "not 64 hex digits")
        }
        let earlier: [PreviousKey] = try f.decodeIfPresent("previousKeys") ?? []
        self.init(
            store: try f.decodeIfPresent("store"), publicKey: key, pairedAtMillis: try f.decode("pairedAtMillis"),
            codeDigest: digest, previousKeys: earlier)
    }

    /// Member `name` of `f`: the base64 of a 32-byte key.
    fileprivate static func key(_ f: NodeJSONFields, _ name: String) throws(NodeJSONError) -> [UInt8] {
        guard let data = Data(base64Encoded: try f.decode(name, as: String.self)), data.count == 32 else {
            throw NodeJSONError(path: f.path(of: name), "not the base64 of 32 bytes")
        }
        return Array(data)
    }
}

extension MasterTrust.PreviousKey: NodeJSONCodable {
    /// The id and the key (base64).
    public var jsonValue: JSONValue {
        nodeJSONObject(["master": master, "publicKey": Data(publicKey).base64EncodedString()])
    }

    /// An earlier key; its id must be the key's.
    public init(json: JSONValue) throws(NodeJSONError) {
        let f = try NodeJSONFields(json)
        self.init(publicKey: try MasterTrust.key(f, "publicKey"))
        guard try f.decode("master", as: String.self) == master else {
            throw NodeJSONError(path: f.path(of: "master"), "the id is not the key's")
        }
    }
}
