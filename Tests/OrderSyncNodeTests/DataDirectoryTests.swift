import CIMode
import EventLoopIO
import Foundation
import Glibc
import JSON
import NodePolicy
import SecureLink
import XCTest

@testable import OrderSyncNode

/// The data directory's files are private whatever the umask; a directory others may write is
/// refused; the local API names the caller's uid in the journal; a refused start leaves the
/// directory as it was.
final class DataDirectoryTests: XCTestCase {
    private func temporaryPath() -> String {
        let d = NSTemporaryDirectory() + "ordersync-datadir-" + UUID().uuidString
        addTeardownBlock { try? FileManager.default.removeItem(atPath: d) }
        return d
    }

    private func configuration(_ directory: String, role: NodeRole = .master) -> NodeConfiguration {
        NodeConfiguration(
            role: role, dataDirectory: directory, store: "shop1", name: "front", serviceType: NodeDefaults.serviceType,
            port: 0, listenAddress: "127.0.0.1", masterURL: nil)
    }

    private func mode(_ path: String) -> mode_t? {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & 0o7777 : nil
    }

    func testFilesAreOwnerOnlyUnderUmask000() throws {
        try assertFilesAreOwnerOnly(umask: 0o000)
    }

    func testFilesAreOwnerOnlyUnderUmask022() throws {
        try assertFilesAreOwnerOnly(umask: 0o022)
    }

    private func assertFilesAreOwnerOnly(umask mask: mode_t) throws {
        let previous = umask(mask)
        defer { umask(previous) }
        let parent = temporaryPath()
        XCTAssertEqual(mkdir(parent, 0o755), 0)
        let path = parent + "/data"
        let c = configuration(path)
        let directory = try DataDirectory(claimingFor: c)
        try directory.store.database.setMetadata("probe", "1")
        XCTAssertEqual(mode(path), 0o700)
        for file in [c.databasePath, c.databasePath + "-wal", c.databasePath + "-shm", c.lockPath, c.keyPath] {
            XCTAssertEqual(mode(file), 0o600, file)
        }
        let id = directory.nodeIdentity.nodeId
        directory.close()
        let again = try DataDirectory(claimingFor: c)
        XCTAssertEqual(again.nodeIdentity.nodeId, id, "the key is made once and reloaded")
        again.close()
    }

    func testAMissingParentOfTheDataDirectoryIsRefusedNotCreated() throws {
        let typo = temporaryPath()
        let path = typo + "/shop/data"
        XCTAssertThrowsError(try DataDirectory(claimingFor: configuration(path))) { error in
            let e = error as? NodeStartupError
            XCTAssertEqual(e?.failure, .notFound)
            XCTAssertTrue(e?.message.contains("\(typo)/shop does not exist") == true, "\(error)")
        }
        XCTAssertNil(mode(typo), "no parent directory is created")
    }

    func testAWorldOrGroupWritableDirectoryIsRefused() throws {
        let path = temporaryPath()
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        for bits: mode_t in [0o777, 0o770, 0o1777] {
            XCTAssertEqual(chmod(path, bits), 0)
            XCTAssertThrowsError(try DataDirectory(claimingFor: configuration(path))) { error in
                let text = "\(error)"
                XCTAssertTrue(text.contains("is writable by"), text)
                XCTAssertTrue(text.contains("chmod 700"), text)
            }
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: configuration(path).databasePath), "nothing is written")
        XCTAssertEqual(chmod(path, 0o750), 0)
        try DataDirectory(claimingFor: configuration(path)).close()
    }

    func testADirectoryOfAnotherUserIsRefused() throws {
        guard geteuid() == 0 else {
            // Under CI a missing prerequisite is a failure, not a skip.
            if CIMode.isOn {
                return XCTFail("changing a directory's owner needs root")
            }
            throw XCTSkip("changing a directory's owner needs root")
        }
        let path = temporaryPath()
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        XCTAssertEqual(chown(path, 65534, 65534), 0)
        XCTAssertThrowsError(try DataDirectory(claimingFor: configuration(path))) { error in
            XCTAssertTrue("\(error)".contains("belongs to uid 65534"), "\(error)")
        }
    }

    func testLocalAPIWritesNameTheCallersUidInTheJournal() throws {
        let master = try RunningNode(role: .master, dataDirectory: temporaryPath(), name: "front")
        defer { master.stop() }
        let client = LocalAPIClient(dataDirectory: master.dataDirectory)
        let uuid = UUID().uuidString.lowercased()
        let created = try client.send(
            method: "POST", path: "/v1/orders",
            body: .object(JSONObject([("uuid", .string(uuid)), ("customerName", .string("Ada"))])))
        XCTAssertEqual(created.status, 201, "\(created.body)")
        let journal = try client.send(method: "GET", path: "/v1/journal")
        let entries = try XCTUnwrap(journal.body.objectValue?["entries"]?.arrayValue)
        XCTAssertEqual(entries.last?.objectValue?["origin"]?.stringValue, "front (local API, uid \(geteuid()))")

        guard case .master(let status) = try master.status() else { return XCTFail("not a master") }
        let key = try String(contentsOfFile: master.dataDirectory + "/" + NodeDefaults.keyFile, encoding: .utf8)
        XCTAssertFalse(key.isEmpty)
        XCTAssertTrue(status.nodeId.range(of: #"^([A-Z2-7]{4}-){7}[A-Z2-7]{4}$"#, options: .regularExpression) != nil, status.nodeId)
        XCTAssertTrue(StatusText.render(.master(status)).contains("node id:   \(status.nodeId)"))
    }

    func testASlaveNamesTheCallersUidInTheRefusalsItMakes() throws {
        let slave = try RunningNode(
            role: .slave, dataDirectory: temporaryPath(), name: "bar-2", masterURL: MasterURL(host: "127.0.0.1", port: 9),
            configure: { $0.pairingCode = PairingCode.generate() })
        defer { slave.stop() }
        let client = LocalAPIClient(dataDirectory: slave.dataDirectory)
        let uuid = UUID().uuidString.lowercased()
        let refused = try client.send(
            method: "PATCH", path: "/v1/orders/\(uuid)", body: .object(JSONObject([("customerName", .string("Bo"))])))
        XCTAssertEqual(refused.status, 404, "\(refused.body)")
        let rejections = try client.send(method: "GET", path: "/v1/rejections")
        let entries = try XCTUnwrap(rejections.body.objectValue?["rejections"]?.arrayValue, "\(rejections.body)")
        XCTAssertEqual(entries.last?.objectValue?["origin"]?.stringValue, "bar-2 (local API, uid \(geteuid()))")
    }

    /// The parent of a data directory or file, bare names included (Foundation's
    /// `deletingLastPathComponent` traps on `m`, so `--data-dir m` crashed the daemon).
    func testParentOfRelativeAndAbsolutePaths() {
        XCTAssertEqual(PrivateDirectory.parent(of: "m"), ".")
        XCTAssertEqual(PrivateDirectory.parent(of: "m/"), ".")
        XCTAssertEqual(PrivateDirectory.parent(of: "a/b"), "a")
        XCTAssertEqual(PrivateDirectory.parent(of: "/var/lib/ordersync"), "/var/lib")
        XCTAssertEqual(PrivateDirectory.parent(of: "/srv"), "/")
        XCTAssertEqual(PrivateDirectory.parent(of: "/var/lib/ordersync//"), "/var/lib")
    }

    // MARK: A refused start leaves the directory as it found it: the checks run before the key
    // or the store is made, and what a later failure made is removed again.

    /// Every file under `path` with its bytes (nil: no such directory).
    private func contents(_ path: String) -> [String: Data]? {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: path) else { return nil }
        var out: [String: Data] = [:]
        for name in names { out[name] = FileManager.default.contents(atPath: path + "/" + name) ?? Data() }
        return out
    }

    private struct Refused: Error {}

    func testAFailedCheckLeavesAnEmptyDirectoryEmptyAndAMissingOneMissing() throws {
        let empty = temporaryPath()
        XCTAssertEqual(mkdir(empty, 0o700), 0)
        XCTAssertThrowsError(try DataDirectory(claimingFor: configuration(empty)) { throw Refused() })
        XCTAssertEqual(contents(empty), [:], "no lock file, key or store is left")

        let parent = temporaryPath()
        XCTAssertEqual(mkdir(parent, 0o700), 0)
        let missing = parent + "/data"
        XCTAssertThrowsError(try DataDirectory(claimingFor: configuration(missing)) { throw Refused() })
        XCTAssertNil(contents(missing), "the directory this start made is gone again")
    }

    func testAFailedCheckLeavesAnExistingStoreByteForByte() throws {
        let path = temporaryPath()
        XCTAssertEqual(mkdir(path, 0o700), 0)
        let c = configuration(path)
        let first = try DataDirectory(claimingFor: c)
        try first.store.database.setMetadata("probe", "1")
        first.markStarted()
        first.close()
        let before = try XCTUnwrap(contents(path))
        XCTAssertNotNil(before[NodeDefaults.keyFile])
        XCTAssertEqual(before[NodeDefaults.lockFile], Data("\(getpid())\n".utf8), "the lock names the daemon that started")
        XCTAssertThrowsError(try DataDirectory(claimingFor: c) { throw Refused() })
        XCTAssertEqual(contents(path), before)
    }

    func testAHeldLockIsRefusedAndLeavesTheDirectoryAsItWas() throws {
        let path = temporaryPath()
        XCTAssertEqual(mkdir(path, 0o700), 0)
        let c = configuration(path)
        let holder = try DataDirectory(claimingFor: c)
        defer { holder.close() }
        let before = try XCTUnwrap(contents(path))
        var checked = false
        XCTAssertThrowsError(try DataDirectory(claimingFor: c) { checked = true }) { error in
            XCTAssertEqual((error as? NodeStartupError)?.failure, .lockHeld)
        }
        XCTAssertFalse(checked, "the checks run only once the lock is held")
        XCTAssertEqual(contents(path), before)
    }

    func testAbandonRemovesWhatTheClaimMadeAndLetsTheNextStartLock() throws {
        let path = temporaryPath()
        XCTAssertEqual(mkdir(path, 0o700), 0)
        let kept = path + "/notes.txt"
        XCTAssertTrue(FileManager.default.createFile(atPath: kept, contents: Data("mine".utf8)))
        let c = configuration(path)
        let claimed = try DataDirectory(claimingFor: c)
        XCTAssertNotNil(contents(path)?[NodeDefaults.databaseFile])
        claimed.abandon()
        XCTAssertEqual(contents(path), ["notes.txt": Data("mine".utf8)])
        let next = try DataDirectory(claimingFor: c)
        next.close()
    }

    func testAPortInUseRefusesTheMasterBeforeItsKeyOrStoreIsMade() throws {
        let taken = try TCPListener.bind(host: "127.0.0.1", port: 0, backlog: 1)
        defer { taken.close() }
        let path = temporaryPath()
        XCTAssertEqual(mkdir(path, 0o700), 0)
        var c = configuration(path)
        c.port = taken.localPort
        XCTAssertThrowsError(try DataDirectory(claimingFor: c) { _ = try MasterNode.bindTerminalPort(c) }) { error in
            let e = error as? NodeStartupError
            XCTAssertEqual(e?.failure, .portInUse)
            XCTAssertEqual(e?.failure.event, "start.port_in_use")
            XCTAssertTrue(e?.fix.contains("--port") == true, "\(String(describing: e))")
        }
        XCTAssertEqual(contents(path), [:])
    }
}
