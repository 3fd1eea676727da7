import Foundation
import Glibc

/// The secret files a node needs to be recognised after a restore, copied beside its store's
/// backup: a master restored without its `node.key` is a new master to every till (they must
/// pair again), a slave without its `master.trust` is not paired.
extension StoreBackup {
    /// The data directory's files copied into `FILE.keys/` when they exist: the node key, a
    /// master's previous key (it still answers slaves not yet handed over), a slave's trust,
    /// the dashboard's TLS key and certificate (its fingerprint is what browsers were shown).
    static let keyFiles = [
        NodeDefaults.keyFile, NodeDefaults.previousKeyFile, NodeDefaults.masterTrustFile,
        NodeDefaults.dashboardKeyFile, NodeDefaults.dashboardCertificateFile,
    ]

    /// The folder beside the backup `file` that holds its key files.
    static func keysFolder(of file: String) -> String { file + ".keys" }

    /// Copies the key files of `dataDirectory` into `FILE.keys/` (mode 0700; each file 0600,
    /// synced, renamed into place); returns the names copied. An existing folder is refused
    /// unless `force` (then the files in it are replaced). No key file at all: nothing is made.
    static func copyKeys(dataDirectory: String, file: String, force: Bool) throws -> [String] {
        var found: [(name: String, bytes: [UInt8])] = []
        for name in keyFiles {
            let path = (dataDirectory as NSString).appendingPathComponent(name)
            guard FileManager.default.fileExists(atPath: path) else { continue }
            guard let data = FileManager.default.contents(atPath: path) else {
                throw Failure(message: "no backup of the keys: cannot read \(path) (run as the daemon's user or root)", failure: .storage)
            }
            found.append((name, Array(data)))
        }
        guard !found.isEmpty else { return [] }
        let folder = keysFolder(of: file)
        if mkdir(folder, 0o700) != 0 {
            let code = errno
            guard code == EEXIST else {
                throw Failure(message: "cannot create \(folder): \(String(cString: strerror(code)))", failure: .storage)
            }
            guard force else {
                throw Failure(message: "\(folder) already exists; choose another file or overwrite it with --force", failure: .refused)
            }
        }
        // mkdir(2) is subject to the umask, chmod(2) is not.
        _ = chmod(folder, 0o700)
        do {
            for key in found {
                try PrivateFile.write(key.bytes, to: (folder as NSString).appendingPathComponent(key.name), what: "the key copy")
            }
        } catch let error as NodeStartupError {
            throw Failure(message: "no backup of the keys: \(error.message)", failure: .storage)
        }
        return found.map(\.name)
    }
}
