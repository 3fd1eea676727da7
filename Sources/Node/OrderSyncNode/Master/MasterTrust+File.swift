import Foundation
import Glibc
import NodePolicy

extension NodeDefaults {
    /// Name of the slave's trust file in its data directory (mode 0600): the master it paired with.
    public static let masterTrustFile = "master.trust"
}

extension NodeConfiguration {
    /// Path of the slave's trust file.
    public var masterTrustPath: String {
        (dataDirectory as NSString).appendingPathComponent(NodeDefaults.masterTrustFile)
    }
}

extension MasterTrust {
    /// The largest trust file read; a real one is well under 1 KiB.
    static let maxFileBytes = 16 << 10

    /// Reads the trust file at `path`; nil when there is none (the slave is not paired).
    ///
    /// Refuses a file that is not a regular file owned by this user, or that its group or
    /// others may read, with a message that says how to fix it; a damaged file is reported,
    /// never replaced.
    public static func load(path: String) throws -> MasterTrust? {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        if fd < 0 {
            let code = errno
            if code == ENOENT { return nil }
            throw NodeStartupError(
                "cannot open the master trust file \(path): \(String(cString: strerror(code)))", failure: .of(errno: code))
        }
        defer { Glibc.close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw NodeStartupError("the master trust file \(path) is not a regular file", failure: .damagedFile)
        }
        guard info.st_uid == geteuid() else {
            throw NodeStartupError(
                "the master trust file \(path) belongs to uid \(info.st_uid), not to this user (uid \(geteuid())); "
                    + "run the node as its owner", failure: .permission)
        }
        let mode = info.st_mode & 0o777
        guard mode & 0o077 == 0 else {
            throw NodeStartupError(
                "the master trust file \(path) is readable by group or others (mode \(String(mode, radix: 8))); "
                    + "run `chmod 600 \(path)`", failure: .permission, fix: "run `chmod 600 \(path)`")
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count <= maxFileBytes {
            let count = Glibc.read(fd, &chunk, chunk.count)
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else {
                throw NodeStartupError("cannot read the master trust file \(path): \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            bytes += chunk[0..<count]
        }
        do {
            guard bytes.count <= maxFileBytes else { throw NodeJSONError(path: "", "larger than \(maxFileBytes) bytes") }
            return try MasterTrust(jsonBytes: bytes)
        } catch {
            throw NodeStartupError(
                "the master trust file \(path) is damaged (\(error)); restore it from a backup, "
                    + "or remove it and pair again: run `ordersync pair` on the master, then start with --pair CODE",
                failure: .damagedFile)
        }
    }

    /// Writes the trust to `path`: a new file (mode 0600 whatever the umask), synced, then moved
    /// into place and the directory synced, so a crash leaves the old trust or the new one.
    public func write(to path: String) throws {
        let bytes = jsonValue.serializedBytes() + [0x0A]
        try PrivateFile.write(bytes, to: path, what: "the master trust file")
    }
}
