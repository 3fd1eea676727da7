import Foundation
import Glibc
import OrderStore

/// The node's data directory: created when missing, locked so two daemons never share it.
final class DataDirectory {
    let path: String
    private var lockFD: Int32 = -1

    init(path: String) {
        self.path = path
    }

    /// Creates the directory and takes the exclusive lock, or explains why not.
    func claim(lockPath: String) throws {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw NodeStartupError("cannot create data directory \(path): \(error.localizedDescription)")
        }
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw NodeStartupError("cannot open \(lockPath): \(String(cString: strerror(errno)))")
        }
        // flock(2): "Only one process may hold an exclusive lock for a given file at a given time."
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            close(fd)
            throw NodeStartupError("another ordersync daemon is already running for \(path) (its lock \(lockPath) is held)")
        }
        let pid = "\(getpid())\n"
        _ = ftruncate(fd, 0)
        _ = pid.withCString { write(fd, $0, strlen($0)) }
        lockFD = fd
    }

    /// Releases the lock.
    func release() {
        if lockFD >= 0 {
            close(lockFD)
            lockFD = -1
        }
    }

    deinit { release() }

    /// Reads a metadata value, creating it with `make()` the first time.
    static func identity(_ db: OrderDatabase, key: String, make: () -> String) throws -> String {
        if let v = try db.metadata(key) { return v }
        let v = make()
        try db.setMetadata(key, v)
        return v
    }

    /// The host name, for default terminal names.
    static func hostName() -> String {
        var buf = [CChar](repeating: 0, count: 256)
        gethostname(&buf, 255)
        let s = String(cString: buf)
        return s.isEmpty ? "ordersync" : s
    }
}
