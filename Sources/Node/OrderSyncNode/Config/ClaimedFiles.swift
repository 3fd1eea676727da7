import Foundation
import Glibc

/// What a claim of a data directory found there (``DataDirectory``), so that a start that fails
/// removes exactly what it made and nothing else: the node's own files that did not exist
/// before (a new store and its `-wal`/`-shm`, a new key, the local API socket, the dashboard's
/// certificate), the lock file if it made it, and the directory itself if it made it and it is
/// empty again. Used only while the lock is held, so no other daemon writes there meanwhile.
struct ClaimedFiles {
    /// The data directory.
    let directory: String
    /// Whether the directory was there before the claim.
    let directoryExisted: Bool
    /// The lock file, and whether it was there before the claim.
    let lockPath: String
    let lockExisted: Bool
    /// The node's files (full paths) that were not there when the lock was taken.
    let absent: [String]

    /// The node's files a start can make in `configuration`'s data directory.
    static func nodeFiles(_ configuration: NodeConfiguration) -> [String] {
        let store = configuration.databasePath
        let key = configuration.keyPath
        return [
            store, store + "-wal", store + "-shm", store + "-journal", key, key + ".new", configuration.socketPath,
            configuration.dashboardCertificatePath, configuration.dashboardCertificatePath + ".new",
            configuration.dashboardKeyPath, configuration.dashboardKeyPath + ".new",
        ]
    }

    /// What is there now (the lock just taken).
    init(_ configuration: NodeConfiguration, directoryExisted: Bool, lockExisted: Bool) {
        directory = configuration.dataDirectory
        self.directoryExisted = directoryExisted
        lockPath = configuration.lockPath
        self.lockExisted = lockExisted
        absent = Self.nodeFiles(configuration).filter { !Self.exists($0) }
    }

    /// Whether `path` names anything (a dangling symbolic link too).
    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// Removes the node's files the claim made, then the lock file if it made it (while still
    /// holding the lock `fd`, closed here), then the directory if it made it.
    func removeMade(releasing fd: Int32) {
        for path in absent where Self.exists(path) {
            unlink(path)
        }
        if !lockExisted { unlink(lockPath) }
        Glibc.close(fd)
        removeDirectoryIfMade()
    }

    /// Removes the directory if the claim made it and it is empty (rmdir(2) refuses one that
    /// is not).
    func removeDirectoryIfMade() {
        if !directoryExisted { rmdir(directory) }
    }
}
