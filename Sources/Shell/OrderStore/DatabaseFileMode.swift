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

    /// No descriptor of an existing file is opened here: closing any descriptor of a file
    /// releases every POSIX lock the process holds on it (fcntl(2): "If a process closes any
    /// file descriptor referring to a file, then all of the process's locks on that file are
    /// released"), SQLite's included. The lock SQLite holds on the `-shm` file tells every other
    /// process that the WAL index is in use; without it, the next process to open the database
    /// (a CLI command, a backup) reinitialises the index, truncating the file under the
    /// daemon, which then dies of SIGBUS reading it. So an existing file is narrowed by path
    /// (`lstat`, `chmod`), and a descriptor is opened only to create a file nobody has yet.
    private static func restrict(_ path: String, create: Bool) throws {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            guard errno == ENOENT, create else { return }
            // O_EXCL: a file created here is one nobody holds open (a race leaves it to SQLite).
            let fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_CREAT | O_EXCL, ownerOnly)
            guard fd >= 0 else { return }
            defer { close(fd) }
            // open(2): the mode given with O_CREAT "is modified by the process's umask"; fchmod(2)
            // is not, so the bits are exactly 0600 under any umask.
            if fchmod(fd, ownerOnly) != 0 { throw failure(path) }
            return
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else { return }
        if info.st_mode & 0o7777 != ownerOnly && chmod(path, ownerOnly) != 0 { throw failure(path) }
    }

    private static func failure(_ path: String) -> StoreError {
        let code = errno
        return StoreError(
            kind: .readOnly, code: nil,
            message: "cannot make \(path) readable by its owner only (chmod 0600): \(String(cString: strerror(code)))",
            path: path)
    }
}
