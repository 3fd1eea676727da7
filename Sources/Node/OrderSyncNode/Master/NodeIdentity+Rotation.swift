import CryptoPrimitives
import Noise

/// A master's keys: the current one, and the previous one after a rotation (Docs/SECURITY.md,
/// "Key rotation and handover").
struct MasterKeys {
    /// The key slaves pair with and are handed over to.
    var current: NodeIdentity
    /// The key before the last rotation; it still answers `ordersync.ik.v1` handshakes.
    var previous: NodeIdentity?

    /// The keys a known-terminal handshake is answered with, current first.
    var noiseKeys: [NoiseKeyPair] {
        ([current] + (previous.map { [$0] } ?? [])).compactMap(\.noiseKeyPair)
    }

    /// The master's keys in the files `keyPath` (already loaded as `current`) and `previousPath`.
    init(current: NodeIdentity, previousPath: String) throws {
        self.current = current
        let previous = try NodeIdentity.load(path: previousPath)
        // A rotation cut short after its first write left the current key in both files.
        self.previous = previous?.nodeId == current.nodeId ? nil : previous
    }

    /// Makes a new key: the current key file's key moves to `previousPath` (replacing an older
    /// previous key), a new one takes its place. Each file is written whole (0600, a new file
    /// synced and renamed into place); a crash between the two leaves the old key in both, which
    /// the master reads as a key with no rotation done.
    mutating func rotate(keyPath: String, previousPath: String) throws {
        let next = NodeIdentity(privateKey: X25519.PrivateKey.generate())
        try NodeIdentity.write(current, to: previousPath)
        try NodeIdentity.write(next, to: keyPath)
        previous = current
        current = next
    }
}

extension NodeIdentity {
    /// The key pair for the Noise handshakes.
    var noiseKeyPair: NoiseKeyPair? {
        try? NoiseKeyPair(privateKey: privateKey.rawRepresentation)
    }

    /// The 32-byte public key.
    var publicKeyBytes: [UInt8] { publicKey.rawRepresentation }
}
