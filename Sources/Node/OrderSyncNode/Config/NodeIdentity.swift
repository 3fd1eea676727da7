import CryptoPrimitives
import Foundation
import Glibc
import NodePolicy

/// A node's static key pair and the id derived from it.
///
/// Every node has one X25519 key pair (`X25519.PrivateKey`, CryptoPrimitives), made on its first start and
/// kept in its data directory (``NodeDefaults/keyFile``) readable by its owner only. The node id
/// is a readable hash of the public key, as Syncthing's device ids are: the first 20 bytes of
/// the SHA-256 of the 32-byte public key, in RFC 4648 base32 (no padding), in groups of four
/// (`ABCD-EFGH-...`, 8 groups). Whoever holds the public key can check the id; nobody can choose
/// a key for a given id.
public struct NodeIdentity {
    /// The static private key.
    public let privateKey: X25519.PrivateKey
    /// The node id of ``publicKey``.
    public let nodeId: String

    /// The static public key.
    public var publicKey: X25519.PublicKey { privateKey.publicKey }

    /// An identity for `privateKey`.
    public init(privateKey: X25519.PrivateKey) {
        self.privateKey = privateKey
        self.nodeId = Self.nodeId(publicKey: privateKey.publicKey.rawRepresentation)
    }

    /// The node id of a 32-byte X25519 public key (``NodeId``).
    public static func nodeId(publicKey: [UInt8]) -> String { NodeId.of(publicKey: publicKey) }

    /// Loads the key file at `path`, or makes a new key and writes it there when no file exists.
    ///
    /// Refuses a key file that is not a regular file owned by this user, or that its group or
    /// others may read, with a message that says how to fix it; a damaged key file is reported,
    /// never replaced (replacing it would change the node's id).
    public static func loadOrCreate(path: String) throws -> NodeIdentity {
        if let existing = try load(path: path) {
            return existing
        }
        let identity = NodeIdentity(privateKey: X25519.PrivateKey.generate())
        try write(identity, to: path)
        return identity
    }

    /// The key file's text: one line, the 32-byte private key in base64.
    static func fileText(_ identity: NodeIdentity) -> String {
        Data(identity.privateKey.rawRepresentation).base64EncodedString() + "\n"
    }

    /// Loads the key file at `path`, nil when there is none; refused and damaged files throw as
    /// in `loadOrCreate(path:)`.
    static func load(path: String) throws -> NodeIdentity? {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        if fd < 0 {
            let code = errno
            if code == ENOENT { return nil }
            throw NodeStartupError("cannot open the node key \(path): \(String(cString: strerror(code)))", failure: .of(errno: code))
        }
        defer { Glibc.close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw NodeStartupError("the node key \(path) is not a regular file", failure: .damagedFile)
        }
        guard info.st_uid == geteuid() else {
            throw NodeStartupError(
                "the node key \(path) belongs to uid \(info.st_uid), not to this user (uid \(geteuid())); run the node as its owner",
                failure: .permission)
        }
        let mode = info.st_mode & 0o777
        guard mode & 0o077 == 0 else {
            throw NodeStartupError(
                "the node key \(path) is readable by group or others (mode \(String(mode, radix: 8))); "
                    + "run `chmod 600 \(path)`, and if others may have read it, treat the key as leaked",
                failure: .permission, fix: "run `chmod 600 \(path)`")
        }
        var bytes = [UInt8](repeating: 0, count: 256)
        let count = Glibc.read(fd, &bytes, bytes.count)
        guard count > 0,
            let text = String(bytes: bytes[0..<count], encoding: .utf8),
            let raw = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)),
            let key = try? X25519.PrivateKey(rawRepresentation: Array(raw))
        else {
            throw NodeStartupError(
                "the node key \(path) is damaged (expected one line of base64, 32 bytes); restore it from a backup",
                failure: .damagedFile)
        }
        return NodeIdentity(privateKey: key)
    }

    /// Writes the key to a new file (mode 0600 whatever the umask) and moves it into place, so a
    /// crash never leaves a half-written key.
    static func write(_ identity: NodeIdentity, to path: String) throws {
        try PrivateFile.write(Array(fileText(identity).utf8), to: path, what: "the node key")
    }
}
