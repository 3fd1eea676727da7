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
}
