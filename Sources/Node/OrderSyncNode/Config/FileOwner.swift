import Foundation

/// Who owns a file, by name, to tell a user who was refused whom to run as.
public struct FileOwner: Sendable, Equatable {
    /// The owning user's name (its uid when it has none).
    public var user: String
    /// The owning group's name (its gid when it has none).
    public var group: String

    /// An owner from its names.
    public init(user: String, group: String) {
        self.user = user
        self.group = group
    }

    /// The owner of `path`, else of `fallback` (the directory, when the file itself cannot be
    /// examined), else `?`.
    init(of path: String, orOf fallback: String) {
        let attributes =
            (try? FileManager.default.attributesOfItem(atPath: path))
            ?? (try? FileManager.default.attributesOfItem(atPath: fallback)) ?? [:]
        user = (attributes[.ownerAccountName] as? String) ?? (attributes[.ownerAccountID] as? NSNumber)?.stringValue ?? "?"
        group = (attributes[.groupOwnerAccountName] as? String) ?? (attributes[.groupOwnerAccountID] as? NSNumber)?.stringValue ?? "?"
    }

    /// Throws when `directory` is missing (`noDataDirectory`) or may not be entered by this
    /// user (`permissionDenied`).
    static func requireDirectory(_ directory: String) throws {
        var info = stat()
        if stat(directory, &info) != 0 {
            if errno == EACCES {
                throw LocalAPIClientError.permissionDenied(
                    path: directory, owner: FileOwner(of: directory, orOf: (directory as NSString).deletingLastPathComponent))
            }
            throw LocalAPIClientError.noDataDirectory(directory)
        }
        if access(directory, X_OK) != 0, errno == EACCES {
            throw LocalAPIClientError.permissionDenied(path: directory, owner: FileOwner(of: directory, orOf: directory))
        }
    }
}
