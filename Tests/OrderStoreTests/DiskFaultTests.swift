import FaultVFS
import Foundation
import SyncCore
import XCTest

@testable import OrderStore

/// I/O errors below SQLite (the fault VFS fails a chosen write or sync with EIO or ENOSPC) on
/// a commit: the caller gets a clear error, nothing is reported committed that is not (in this
/// process or after a power cut), and the store works again right after.
final class DiskFaultTests: FaultVFSStoreTestCase {
    /// One fault on the commit of order B between two good commits (A before, C after).
    private func assertCommitFails(
        _ fault: FaultVFS.Fault, on calls: FaultVFS.Calls, expecting kind: StoreError.Kind, primaryCode: Int32,
        saying message: String, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let db = try openDatabase()
        let a = try commitOrder(db, seq: 1)
        FaultVFS.arm(fault, on: calls, under: machine)
        let b = makeOrder(customer: "B")
        let error = assertStoreError(kind, file: file, line: line) {
            try db.transaction {
                try db.insertOrder(b)
                try db.appendJournal(
                    JournalEntry(
                        seq: 2, opId: "op-b", origin: "local", operation: .create, orderUUIDs: [b.uuid],
                        message: Array("{}".utf8), recordedAtMillis: 2))
            }
        }
        XCTAssertEqual(FaultVFS.counters.faultsInjected, 1, file: file, line: line)
        XCTAssertEqual(error?.primaryCode, primaryCode, "\(String(describing: error))", file: file, line: line)
        XCTAssertEqual(error?.path, dbPath, file: file, line: line)
        XCTAssertTrue(error?.message.contains(message) == true, "\(String(describing: error))", file: file, line: line)
        // Not committed: not seen, no transaction left open, the journal still ends at A.
        XCTAssertFalse(db.isInTransaction, file: file, line: line)
        XCTAssertNil(try db.order(uuid: b.uuid), file: file, line: line)
        XCTAssertEqual(try db.lastJournalSeq(), 1, file: file, line: line)
        // The store works again at once: C commits under the same seq B wanted.
        let c = try commitOrder(db, seq: 2, customer: "C")
        XCTAssertEqual(try db.journalEntry(seq: 2)?.orderUUIDs, [c.uuid], file: file, line: line)
        // After a power cut: A and C (acknowledged) are there, B is not.
        losePower(db, .drop)
        let reopened = try openDatabase()
        XCTAssertNotNil(try reopened.order(uuid: a.uuid), file: file, line: line)
        XCTAssertNotNil(try reopened.order(uuid: c.uuid), file: file, line: line)
        XCTAssertNil(try reopened.order(uuid: b.uuid), file: file, line: line)
        XCTAssertEqual(try reopened.quickCheck(), [], file: file, line: line)
    }

    func testEIOOnAWriteOfTheCommit() throws {
        try assertCommitFails(.eio, on: .write, expecting: .sqlite, primaryCode: 10, saying: "disk I/O error") // SQLITE_IOERR
    }

    func testEIOOnTheSyncOfTheCommit() throws {
        try assertCommitFails(.eio, on: .sync, expecting: .sqlite, primaryCode: 10, saying: "disk I/O error")
    }

    func testENOSPCOnAWriteOfTheCommit() throws {
        try assertCommitFails(.enospc, on: .write, expecting: .full, primaryCode: 13, saying: "disk is full") // SQLITE_FULL
    }

    /// A disk that stays full: every commit fails with `.full` and changes nothing; once space
    /// is back, the next commit succeeds and everything acknowledged is there.
    func testADiskThatStaysFullRefusesEveryCommitAndLosesNothing() throws {
        let db = try openDatabase()
        let a = try commitOrder(db, seq: 1)
        FaultVFS.arm(.enospc, on: [.write, .truncate], under: machine, count: -1)
        for attempt in 0..<5 {
            assertStoreError(.full) { try commitOrder(db, seq: 2, customer: "attempt \(attempt)") }
        }
        XCTAssertEqual(try db.orderCount(), 1)
        FaultVFS.disarm()
        let c = try commitOrder(db, seq: 2)
        losePower(db, .drop)
        let reopened = try openDatabase()
        XCTAssertEqual(Set(try reopened.allOrders().map(\.uuid)), [a.uuid, c.uuid])
        XCTAssertEqual(try reopened.lastJournalSeq(), 2)
    }
}
