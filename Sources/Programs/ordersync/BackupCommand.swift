import ArgumentParser
import Foundation
import JSON
import OrderSyncNode

/// `ordersync backup`: a consistent, checked copy of the order store, made while the daemon runs.
struct BackupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Copy the order store to FILE with SQLite's online backup (the daemon may keep running).",
        discussion: """
            The copy is one consistent state of the store, checked with PRAGMA quick_check, written to a \
            temporary file, synced to disk and renamed to FILE. The node's key files (node.key, \
            node.key.previous, a slave's master.trust, the dashboard's TLS key and certificate) are copied \
            to the folder FILE.keys (mode 0700, files 0600): it holds the node's private key, a secret. \
            A master restored from it keeps its epoch and starts a new term: its slaves send back what they \
            hold beyond the backup. Restoring: Docs/OPERATIONS.md, "Backup and restore".
            """)

    @OptionGroup var data: DataDirOption

    @Argument(help: ArgumentHelp("The backup file to write.", valueName: "file"))
    var file: String

    @Flag(name: .long, help: "Replace FILE (and the files in FILE.keys) when it exists.")
    var force = false

    @Flag(name: .long, help: "Print what was copied as JSON.")
    var json = false

    func run() throws {
        let dir = try data.resolved()
        do {
            let report = try StoreBackup.make(dataDirectory: dir, file: file, force: force)
            print(json ? JSONValue.object(report.json).serialized() : report.lines.joined(separator: "\n"))
        } catch let e as StoreBackup.Failure {
            FileHandle.standardError.write(Data("ordersync: \(e.message)\n".utf8))
            throw ExitStatus(e.failure).exitCode
        }
    }
}
