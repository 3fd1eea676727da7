import Foundation
import Glibc

/// The rules for a directory that holds a node's private files (its data directory, the
/// directory of its local API socket): created with mode 0700, and refused when another user
/// could put, replace or remove files in it.
public enum PrivateDirectory {
    /// The mode a new data directory gets: owner only.
    public static let mode: mode_t = 0o700

    /// Creates `path` with mode 0700 when it is missing, then checks it with
    /// ``check(_:what:)``. Its parent must exist: a missing parent is far more often a typo in
    /// the path than a wish for a new tree of folders, and would silently start a new, empty
    /// store (`failure: .notFound`).
    public static func create(_ path: String, what: String) throws {
        var info = stat()
        if lstat(path, &info) != 0 {
            guard errno == ENOENT else {
                let code = errno
                throw NodeStartupError("cannot use the \(what) \(path): \(String(cString: strerror(code)))", failure: .of(errno: code))
            }
            let parent = parent(of: path)
            var parentInfo = stat()
            let parentFound = stat(parent, &parentInfo) == 0
            if !parentFound || (parentInfo.st_mode & S_IFMT) != S_IFDIR {
                let reason = parentFound ? "is not a directory" : "does not exist"
                throw NodeStartupError(
                    "the \(what) \(path) cannot be made: its parent directory \(parent) \(reason). "
                        + "Check the path for a typo; create the parent first if it is meant (missing parents are never created)",
                    failure: .notFound)
            }
            if mkdir(path, mode) != 0 && errno != EEXIST {
                let code = errno
                throw NodeStartupError("cannot create the \(what) \(path): \(String(cString: strerror(code)))", failure: .of(errno: code))
            }
            // mkdir(2): "the permissions of the created directory are (mode & ~umask & 0777)";
            // chmod(2) is not subject to the umask. Only a directory this call made is changed.
            if lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR, info.st_uid == geteuid(),
                info.st_mode & 0o777 != mode
            {
                _ = chmod(path, mode)
            }
        }
        try check(path, what: what)
    }

    /// Refuses a directory that is not this user's, or that its group or others may write:
    /// whoever can write it can replace the socket, the database or the key in it.
    ///
    /// A symbolic link is followed; the directory it names is what is checked.
    public static func check(_ path: String, what: String) throws {
        var info = stat()
        guard stat(path, &info) == 0 else {
            let code = errno
            throw NodeStartupError("cannot use the \(what) \(path): \(String(cString: strerror(code)))", failure: .of(errno: code))
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw NodeStartupError("the \(what) \(path) is not a directory", failure: .settings)
        }
        let user = geteuid()
        guard info.st_uid == user else {
            throw NodeStartupError(
                "the \(what) \(path) belongs to uid \(info.st_uid), not to this user (uid \(user)); "
                    + "run the node as its owner or give it a directory of its own",
                failure: .permission)
        }
        let bits = info.st_mode & 0o7777
        guard bits & 0o022 == 0 else {
            let writers = [bits & 0o020 != 0 ? "its group" : nil, bits & 0o002 != 0 ? "others" : nil].compactMap { $0 }
            throw NodeStartupError(
                "the \(what) \(path) is writable by \(writers.joined(separator: " and ")) "
                    + "(mode \(String(bits, radix: 8))); other users could replace the files in it. "
                    + "Run `chmod 700 \(path)` (or 750 to let a group read)",
                failure: .permission, fix: "run `chmod 700 \(path)` (or 750 to let a group read)")
        }
    }

    /// The directory holding `path`: "." for a bare name, "/" for a name at the root. (Spelled
    /// out because Foundation's `deletingLastPathComponent` traps on some relative paths.)
    public static func parent(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "." }
        let head = trimmed[..<slash]
        return head.isEmpty ? "/" : String(head)
    }
}
