import Foundation
import Glibc
import Logging
import OrderStore

/// The node's data directory, claimed: created when missing (mode 0700; its parent must exist) and refused when other
/// users could write it, locked so two daemons never share it, with the node's key loaded (made
/// on first start) and its order store open and checked to belong to the node's role. Every
/// file in it is made readable by its owner only (0600), whatever the umask. The store a node is
/// built on; `close()` closes the store and releases the lock.
///
/// A start that fails leaves the directory as it found it: the checks that can refuse it run
/// before the key or the store is made, and ``abandon()`` (or a failure in `init`) removes
/// what this claim made (``ClaimedFiles``).
public final class DataDirectory {
    /// The directory.
    public let path: String
    /// The order store in it.
    public let store: NodeStore
    /// The node's static key pair and id, from the key file in it.
    public let nodeIdentity: NodeIdentity
    private var lockDescriptor: Int32
    /// What existed before this claim, so that a failed start removes only what it made.
    private let claimed: ClaimedFiles

    /// Creates the directory, takes its exclusive lock, runs `checks` (a start's cheap refusals:
    /// its port, its pairing), then loads (or makes) the node key and opens its store for
    /// `configuration`'s role (`StoreOpening`), or explains why not. Whatever fails, the
    /// directory is left as it was.
    public init(
        claimingFor configuration: NodeConfiguration, logger: Logger = Logger(label: "ordersync.store"),
        checks: () throws -> Void = {}
    ) throws {
        path = configuration.dataDirectory
        let directoryExisted = ClaimedFiles.exists(path)
        try PrivateDirectory.create(path, what: "data directory")
        let lockExisted = ClaimedFiles.exists(configuration.lockPath)
        let fd: Int32
        do {
            fd = try Self.lock(directory: path, lockPath: configuration.lockPath)
        } catch {
            // Held by another daemon: its lock file stays (and a directory made here goes).
            ClaimedFiles(configuration, directoryExisted: directoryExisted, lockExisted: true).removeDirectoryIfMade()
            throw error
        }
        let claimed = ClaimedFiles(configuration, directoryExisted: directoryExisted, lockExisted: lockExisted)
        do {
            try checks()
            nodeIdentity = try NodeIdentity.loadOrCreate(path: configuration.keyPath)
            store = try NodeStore.open(configuration, logger: logger, nodeId: nodeIdentity.nodeId)
        } catch {
            claimed.removeMade(releasing: fd)
            throw error
        }
        lockDescriptor = fd
        self.claimed = claimed
    }

    private static func lock(directory: String, lockPath: String) throws -> Int32 {
        while true {
            let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard fd >= 0 else {
                let code = errno
                throw NodeStartupError("cannot open \(lockPath): \(String(cString: strerror(code)))", failure: .of(errno: code))
            }
            // The mode given to open(2) is reduced by the umask; fchmod(2) sets it exactly (and
            // narrows a lock file an older build left at 0644).
            _ = fchmod(fd, 0o600)
            // flock(2): "Only one process may hold an exclusive lock for a given file at a given time."
            if flock(fd, LOCK_EX | LOCK_NB) != 0 {
                Glibc.close(fd)
                throw NodeStartupError(
                    "another ordersync daemon is already running for \(directory) (its lock \(lockPath) is held)", failure: .lockHeld)
            }
            // A failed start removes a lock file it made while holding it: a lock taken on that
            // file just before is on a name that is gone, so take it again on the file there now.
            var held = stat()
            var named = stat()
            guard fstat(fd, &held) == 0, lstat(lockPath, &named) == 0, held.st_ino == named.st_ino, held.st_dev == named.st_dev
            else {
                Glibc.close(fd)
                continue
            }
            return fd
        }
    }

    /// The start succeeded: the lock file names this process (a refused start leaves the pid
    /// of the last daemon that ran in it).
    public func markStarted() {
        guard lockDescriptor >= 0 else { return }
        let pid = "\(getpid())\n"
        _ = ftruncate(lockDescriptor, 0)
        _ = pid.withCString { pwrite(lockDescriptor, $0, strlen($0), 0) }
    }

    /// A start that failed after the claim (its role did not start): closes the store, removes
    /// the files this claim made (a new store, key, lock file, the directory itself if it made
    /// it) and releases the lock. Files that were there before are left as they are.
    public func abandon() {
        guard lockDescriptor >= 0 else { return }
        store.close()
        claimed.removeMade(releasing: lockDescriptor)
        lockDescriptor = -1
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
