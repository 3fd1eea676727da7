import Glibc

/// Files only their owner may read, written whole: to a new file (mode 0600 whatever the
/// umask), synced, then renamed into place, so a crash never leaves a half-written one.
enum PrivateFile {
    /// Writes `bytes` to `path`; the error names `what`.
    static func write(_ bytes: [UInt8], to path: String, what: String) throws {
        let temporary = path + ".new"
        unlink(temporary)
        let fd = Glibc.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else {
            let code = errno
            throw NodeStartupError("cannot create \(what) \(temporary): \(String(cString: strerror(code)))", failure: .of(errno: code))
        }
        // fchmod(2) is not subject to the umask, unlike open's mode.
        let ok = fchmod(fd, 0o600) == 0 && Glibc.write(fd, bytes, bytes.count) == bytes.count && fsync(fd) == 0
        let code = errno
        Glibc.close(fd)
        guard ok, rename(temporary, path) == 0 else {
            let failure = ok ? errno : code
            unlink(temporary)
            throw NodeStartupError("cannot write \(what) \(path): \(String(cString: strerror(failure)))", failure: .of(errno: failure))
        }
        let directory = Glibc.open(PrivateDirectory.parent(of: path), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 {
            _ = fsync(directory)
            Glibc.close(directory)
        }
    }
}
