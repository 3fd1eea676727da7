import Foundation
import Glibc
import Logging
import OrderStore

/// The node's data directory, claimed: created when missing (mode 0700; its parent must exist) and refused when other
/// users could write it, locked so two daemons never share it, with the node's key loaded (made
/// on first start) and its order store open and checked to belong to the node's role. Every
/// file in it is made readable by its owner only (0600), whatever the umask. The store a node is
/// built on; `close()` closes the store and releases the lock.
public final class DataDirectory {
    /// The directory.
    public let path: String
    /// The order store in it.
    public let store: NodeStore
    /// The node's static key pair and id, from the key file in it.
    public let nodeIdentity: NodeIdentity
    private var lockDescriptor: Int32

    /// Creates the directory, takes its exclusive lock, loads (or makes) the node key and opens
    /// its store for `configuration`'s role (`StoreOpening`), or explains why not.
    public init(claimingFor configuration: NodeConfiguration, logger: Logger = Logger(label: "ordersync.store")) throws {
        path = configuration.dataDirectory
        try PrivateDirectory.create(path, what: "data directory")
        lockDescriptor = try Self.lock(directory: path, lockPath: configuration.lockPath)
        do {
            nodeIdentity = try NodeIdentity.loadOrCreate(path: configuration.keyPath)
            store = try NodeStore.open(configuration, logger: logger, nodeId: nodeIdentity.nodeId)
        } catch {
            Glibc.close(lockDescriptor)
            throw error
        }
    }

    private static func lock(directory: String, lockPath: String) throws -> Int32 {
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else {
            throw NodeStartupError("cannot open \(lockPath): \(String(cString: strerror(errno)))")
        }
        // The mode given to open(2) is reduced by the umask; fchmod(2) sets it exactly (and
        // narrows a lock file an older build left at 0644).
        _ = fchmod(fd, 0o600)
        // flock(2): "Only one process may hold an exclusive lock for a given file at a given time."
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            Glibc.close(fd)
            throw NodeStartupError("another ordersync daemon is already running for \(directory) (its lock \(lockPath) is held)")
        }
        let pid = "\(getpid())\n"
        _ = ftruncate(fd, 0)
        _ = pid.withCString { write(fd, $0, strlen($0)) }
        return fd
    }

    /// Closes the store and releases the lock.
    public func close() {
        guard lockDescriptor >= 0 else { return }
        store.close()
        Glibc.close(lockDescriptor)
        lockDescriptor = -1
    }

    deinit { close() }

    /// The host name, for default terminal names.
    static func hostName() -> String {
        var buf = [CChar](repeating: 0, count: 256)
        gethostname(&buf, 255)
        let s = String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return s.isEmpty ? "ordersync" : s
    }
}
