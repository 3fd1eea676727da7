import Foundation
import Glibc
import XCTest

@testable import OrderStore

/// The database and the files SQLite keeps next to it are readable by their owner only,
/// whatever the umask.
final class FileModeTests: StoreTestCase {
    private func mode(_ path: String) -> mode_t? {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & 0o7777 : nil
    }

    /// Runs `body` with the process umask set to `mask`, restoring it after.
    private func withUmask<T>(_ mask: mode_t, _ body: () throws -> T) rethrows -> T {
        let previous = umask(mask)
        defer { umask(previous) }
        return try body()
    }

    private func assertOwnerOnly(file: StaticString = #filePath, line: UInt = #line) throws {
        let db = try openDatabase()
        try db.insertOrder(makeOrder())
        for path in [dbPath, dbPath + "-wal", dbPath + "-shm"] {
            XCTAssertEqual(mode(path), 0o600, "\(path)", file: file, line: line)
        }
        db.close()
    }

    func testNewDatabaseWALAndSHMAreOwnerOnlyUnderUmask000() throws {
        try withUmask(0o000) { try assertOwnerOnly() }
    }

    func testNewDatabaseWALAndSHMAreOwnerOnlyUnderUmask022() throws {
        try withUmask(0o022) { try assertOwnerOnly() }
    }

    func testADatabaseLeftWorldReadableIsNarrowedWhenOpened() throws {
        try withUmask(0o000) {
            let old = try openDatabase()
            try old.insertOrder(makeOrder())
            for path in [dbPath, dbPath + "-wal", dbPath + "-shm"] {
                XCTAssertEqual(chmod(path, 0o644), 0, path)
            }
            let reopened = try openDatabase()
            for path in [dbPath, dbPath + "-wal", dbPath + "-shm"] {
                XCTAssertEqual(mode(path), 0o600, path)
            }
            XCTAssertEqual(try reopened.allOrders().count, 1)
            reopened.close()
            old.close()
        }
    }

    /// Narrowing the modes must not cost SQLite its locks: closing any descriptor of a file
    /// releases all of the process's POSIX locks on it. Another process must still see the lock
    /// SQLite holds on the `-shm` file's "DMS" byte (offset 128 in SQLite's unix VFS) while the
    /// database is open, or it would take the WAL index for unused and reinitialise it under us
    /// (which killed a slave with SIGBUS).
    func testAnotherProcessStillSeesTheWALIndexInUseOnceOpened() throws {
        let db = try openDatabase()
        try db.insertOrder(makeOrder())
        let probe = """
            import fcntl, os, struct, sys
            fd = os.open(sys.argv[1], os.O_RDWR)
            answer = fcntl.fcntl(fd, fcntl.F_GETLK, struct.pack("hhqqi4x", fcntl.F_WRLCK, 0, 128, 1, 0))
            print("unlocked" if struct.unpack("hhqqi4x", answer)[0] == fcntl.F_UNLCK else "locked")
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", probe, dbPath + "-shm"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        process.waitUntilExit()
        let answer = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertEqual(process.terminationStatus, 0, "python3 is needed for this test")
        XCTAssertEqual(answer.trimmingCharacters(in: .whitespacesAndNewlines), "locked")
        db.close()
    }
}
