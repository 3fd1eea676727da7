import Glibc

/// The permission bits of a database and of the files SQLite keeps next to it: the owner
/// reads and writes, nobody else even reads, whatever the process umask.
enum DatabaseFileMode {
    /// Owner read and write (0600).
    static let ownerOnly: mode_t = 0o600

    /// The files SQLite creates next to a database: the write-ahead log, its shared-memory
    /// index and the rollback journal.
    static func companions(of path: String) -> [String] {
        ["-wal", "-shm", "-journal"].map { path + $0 }
    }

    /// Creates the database file with mode 0600 when it is missing, and sets 0600 on it and on
    /// its companions that exist (a database an older build left with the umask's 0644).
    ///
    /// Done before SQLite opens the file because SQLite gives new companions the database's own
    /// mode: "the -wal and -shm files ... are created with the same permissions as the original
    /// database file" (os_unix.c, `findCreateFileMode`), and `fchmod`s them to it, so the umask
    /// never widens them. Paths SQLite does not treat as files (`:memory:`, `file:` URIs) are
    /// left alone; a file that cannot be opened here is left for SQLite to report.
    static func restrictToOwner(_ path: String) throws {
        guard !path.isEmpty, path != ":memory:", !path.hasPrefix("file:") else { return }
        try restrict(path, create: true)
        for companion in companions(of: path) {
            try restrict(companion, create: false)
        }
    }

    /// Sets 0600 on the companions now present (after WAL mode made them).
    static func restrictCompanions(of path: String) throws {
        guard !path.isEmpty, path != ":memory:", !path.hasPrefix("file:") else { return }
        for companion in companions(of: path) {
            try restrict(companion, create: false)
        }
    }

    private static func restrict(_ path: String, create: Bool) throws {
        let flags = O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0)
        let fd = open(path, flags, ownerOnly)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return }
        // open(2): the mode given with O_CREAT "is modified by the process's umask"; fchmod(2)
        // is not, so the bits are exactly 0600 under any umask.
        if info.st_mode & 0o7777 != ownerOnly && fchmod(fd, ownerOnly) != 0 {
            let code = errno
            throw StoreError(
                kind: .readOnly, code: nil,
                message: "cannot make \(path) readable by its owner only (chmod 0600): \(String(cString: strerror(code)))",
                path: path)
        }
    }
}
