import Glibc

/// A listening Unix domain stream socket at a filesystem path (close-on-exec, nonblocking).
public final class UnixListener: ListeningSocket {
    private let socket: Socket
    /// The socket file's path.
    public let path: String
    private let inode: ino_t

    private init(socket: Socket, path: String, inode: ino_t) {
        self.socket = socket
        self.path = path
        self.inode = inode
    }

    deinit {
        removeSocketFile()
    }

    /// Binds and listens at `path`, then sets the file's permission bits to `mode`
    /// (0o600 for the owner only, 0o660 to let the owner's group in).
    ///
    /// A socket file left behind by a crashed process is removed first, but only when nothing
    /// answers on it; if a live process listens there this throws `EADDRINUSE`. A path that
    /// exists and is not a socket is never removed (`EEXIST`). The mode is applied right after
    /// `bind`, so keep the socket in a directory only its owner can enter (the data directory).
    public static func bind(path: String, mode: mode_t = 0o600, backlog: Int32 = 64) throws -> UnixListener {
        let address = try SocketAddress(unixPath: path)
        try removeStaleSocket(at: path)
        let socket = try Socket.make(family: AF_UNIX)
        let fd = socket.descriptor
        _ = try address.withSockAddr { pointer, length in
            try Syscall.call("bind") { Glibc.bind(fd, pointer, length) }
        }
        var info = stat()
        do {
            _ = try Syscall.call("chmod") { chmod(path, mode) }
            _ = try Syscall.call("listen") { listen(fd, backlog) }
            _ = try Syscall.call("stat") { stat(path, &info) }
        } catch {
            unlink(path)
            throw error
        }
        return UnixListener(socket: socket, path: path, inode: info.st_ino)
    }

    private static func removeStaleSocket(at path: String) throws {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            return
        }
        guard (info.st_mode & S_IFMT) == S_IFSOCK else {
            throw PosixError(call: "bind", errno: EEXIST, detail: "\(path) exists and is not a socket")
        }
        do {
            let probe = try UnixSocket.connectBlocking(path: path)
            probe.close()
            throw PosixError(
                call: "bind", errno: EADDRINUSE,
                detail: "another process is listening on \(path)")
        } catch let error as PosixError where error.errno == ECONNREFUSED || error.errno == ENOENT {
            // Nobody listens: the file is left over from a process that is gone.
            unlink(path)
        }
    }

    /// The listening descriptor, for registration on an ``EventLoop``.
    public var descriptor: Int32 { socket.descriptor }

    /// Accepts one pending connection; `nil` when none is pending. See ``ListeningSocket``.
    public func accept() throws -> AcceptedSocket? {
        try ListenerSupport.accept(socket)
    }

    /// Stops listening and removes the socket file (if it is still the one this listener made).
    /// Unregister the descriptor from its loop first.
    public func close() {
        removeSocketFile()
        socket.close()
    }

    private func removeSocketFile() {
        guard socket.isOpen else { return }
        var info = stat()
        if lstat(path, &info) == 0 && info.st_ino == inode {
            unlink(path)
        }
    }
}
