import Foundation
import Glibc
import OrderStore

/// The node's data directory, claimed: created when missing, locked so two daemons never share
/// it, with its order store open and checked to belong to the node's role. The store a node is
/// built on; `close()` closes the store and releases the lock.
public final class DataDirectory {
    /// The directory.
    public let path: String
    /// The order store in it.
    public let database: OrderDatabase
    private var lockDescriptor: Int32

    /// Creates the directory, takes its exclusive lock and opens its store for `configuration`'s
    /// role, or explains why not.
    public init(claimingFor configuration: NodeConfiguration) throws {
        path = configuration.dataDirectory
        lockDescriptor = try Self.lock(directory: path, lockPath: configuration.lockPath)
        do {
            database = try Self.openStore(configuration)
        } catch {
            Glibc.close(lockDescriptor)
            throw error
        }
    }

    private static func lock(directory: String, lockPath: String) throws -> Int32 {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw NodeStartupError("cannot create data directory \(directory): \(error.localizedDescription)")
        }
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw NodeStartupError("cannot open \(lockPath): \(String(cString: strerror(errno)))")
        }
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

    /// Opens the store and checks it belongs to the configuration's role.
    private static func openStore(_ c: NodeConfiguration) throws -> OrderDatabase {
        let db: OrderDatabase
        do {
            db = try OrderDatabase(path: c.databasePath)
        } catch {
            throw NodeStartupError("cannot open the order store \(c.databasePath): \(error)")
        }
        do {
            if let role = try db.metadata("node.role"), role != c.role.rawValue {
                throw NodeStartupError(
                    "\(c.dataDirectory) holds a \(role)'s order store; use another --data-dir for the \(c.role.rawValue)")
            }
            try db.setMetadata("node.role", c.role.rawValue)
        } catch {
            db.close()
            throw error
        }
        return db
    }

    /// Closes the store and releases the lock.
    public func close() {
        guard lockDescriptor >= 0 else { return }
        database.close()
        Glibc.close(lockDescriptor)
        lockDescriptor = -1
    }

    deinit { close() }

    /// Reads a metadata value, creating it with `make()` the first time.
    func identity(key: String, make: () -> String) throws -> String {
        if let v = try database.metadata(key) { return v }
        let v = make()
        try database.setMetadata(key, v)
        return v
    }

    /// The host name, for default terminal names.
    static func hostName() -> String {
        var buf = [CChar](repeating: 0, count: 256)
        gethostname(&buf, 255)
        let s = String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return s.isEmpty ? "ordersync" : s
    }
}
